//! The settings read in groups (the identity provider and the internal scheme, the dev IdP,
//! the server's limits, the compile cache's key, the facade's redirects, the registry, the
//! process's telemetry), each group's checks beside its reading.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use super::settings::{
    err, AllowedRedirect, AuthorizeCallback, ConfigError, FollowOptions, IdpConfig, IdpProfile,
    InternalScheme, Password, RegistryOptions, ServerLimits,
};
use super::source::Source;
use super::values::{http_url, redirect_uri};
use crate::references::{bind_all, is_loopback};

/// The upstream IdP's endpoints and profile; unset endpoints are the dev IdP's under `dev`.
pub(super) fn idp(src: &Source, dev: &str) -> Result<IdpConfig, ConfigError> {
    let endpoint = |key: &str, path: &str| match src.get(key) {
        Some(u) => http_url(key, &u),
        None => Ok(format!("{dev}/{path}")),
    };
    Ok(IdpConfig {
        issuer: src
            .get("LOANHOST_IDP_ISSUER")
            .unwrap_or_else(|| dev.to_string()),
        authorize_url: endpoint("LOANHOST_IDP_AUTHORIZE_URL", "authorize")?,
        token_url: endpoint("LOANHOST_IDP_TOKEN_URL", "token")?,
        jwks_url: endpoint("LOANHOST_IDP_JWKS_URL", "jwks")?,
        profile: match src.required("LOANHOST_IDP_PROFILE").trim() {
            "auth0" => IdpProfile::Auth0,
            "oidc" => IdpProfile::Oidc,
            "entra" => IdpProfile::Entra,
            "okta" => IdpProfile::Okta,
            other => {
                return Err(err(
                    "LOANHOST_IDP_PROFILE",
                    format!("`{other}` is none of auth0 (the default), oidc, entra and okta"),
                ))
            }
        },
    })
    .and_then(|idp| match idp.profile {
        IdpProfile::Entra => entra_issuer(&idp.issuer).map(|()| idp),
        IdpProfile::Okta => okta_issuer(&idp.issuer).map(|()| idp),
        _ => Ok(idp),
    })
}

/// Entra ID signs each tenant's tokens with the tenant's own `iss`: the multi-tenant
/// authorities (`common`, `organizations`, `consumers`) and a `{tenantid}` placeholder are not
/// an issuer any token carries, so a host configured with one would refuse every sign-in.
fn entra_issuer(issuer: &str) -> Result<(), ConfigError> {
    let tenant = url::Url::parse(issuer).ok().and_then(|u| {
        u.path_segments()
            .and_then(|mut s| s.next().map(str::to_ascii_lowercase))
    });
    match tenant.as_deref() {
        Some("common" | "organizations" | "consumers") => Err(err(
            "LOANHOST_IDP_ISSUER",
            format!(
                "`{issuer}` is Entra ID's multi-tenant authority, not an issuer: with \
                 LOANHOST_IDP_PROFILE=entra name the tenant's, \
                 https://login.microsoftonline.com/<tenant id>/v2.0"
            ),
        )),
        // The URL parser has percent-encoded the braces of `{tenantid}`.
        Some(t) if t.contains("%7b") => Err(err(
            "LOANHOST_IDP_ISSUER",
            format!(
                "`{issuer}` holds a placeholder: with LOANHOST_IDP_PROFILE=entra name the \
                 tenant's issuer, https://login.microsoftonline.com/<tenant id>/v2.0"
            ),
        )),
        _ => Ok(()),
    }
}

/// Okta signs a custom authorization server's tokens with its issuer,
/// `https://<domain>/oauth2/<id>`. The org authorization server (`https://<domain>`) issues
/// tokens for Okta's own APIs, which no other resource server can validate; a host configured
/// with it would refuse every sign-in.
fn okta_issuer(issuer: &str) -> Result<(), ConfigError> {
    let segments: Vec<String> = url::Url::parse(issuer)
        .ok()
        .and_then(|u| {
            u.path_segments()
                .map(|s| s.filter(|s| !s.is_empty()).map(str::to_string).collect())
        })
        .unwrap_or_default();
    match segments.as_slice() {
        [oauth2, id] if oauth2 == "oauth2" && !id.contains("%7B") => Ok(()),
        _ => Err(err(
            "LOANHOST_IDP_ISSUER",
            format!(
                "`{issuer}` is not an Okta custom authorization server's issuer: with \
                 LOANHOST_IDP_PROFILE=okta name one, https://<your Okta domain>/oauth2/<id> \
                 (e.g. /oauth2/default); the org authorization server's tokens are for Okta's \
                 own APIs"
            ),
        )),
    }
}

/// The internal scheme: both of its settings or neither, with an issuer of its own.
pub(super) fn internal(
    src: &Source,
    idp: &IdpConfig,
) -> Result<Option<InternalScheme>, ConfigError> {
    match (
        src.get("LOANHOST_INTERNAL_ISSUER"),
        src.get("LOANHOST_INTERNAL_JWKS_URL"),
    ) {
        (None, None) => Ok(None),
        (Some(issuer), Some(jwks)) => {
            if issuer == idp.issuer {
                return Err(err(
                    "LOANHOST_INTERNAL_ISSUER",
                    "must differ from the IdP issuer: schemes are routed by issuer",
                ));
            }
            Ok(Some(InternalScheme {
                issuer,
                jwks_url: http_url("LOANHOST_INTERNAL_JWKS_URL", &jwks)?,
            }))
        }
        (Some(_), None) => Err(err(
            "LOANHOST_INTERNAL_JWKS_URL",
            "must be set with LOANHOST_INTERNAL_ISSUER",
        )),
        (None, Some(_)) => Err(err(
            "LOANHOST_INTERNAL_ISSUER",
            "must be set with LOANHOST_INTERNAL_JWKS_URL",
        )),
    }
}

/// Behind an https:// base URL, a plain-http IdP endpoint would carry client secrets and
/// codes in clear, or let anyone on the path swap the signing keys: each must be https too.
pub(super) fn https_behind_https(
    base_url: &str,
    idp: &IdpConfig,
    internal: Option<&InternalScheme>,
) -> Result<(), ConfigError> {
    if !base_url.starts_with("https://") {
        return Ok(());
    }
    let mut endpoints = vec![
        ("LOANHOST_IDP_AUTHORIZE_URL", &idp.authorize_url),
        ("LOANHOST_IDP_TOKEN_URL", &idp.token_url),
        ("LOANHOST_IDP_JWKS_URL", &idp.jwks_url),
    ];
    if let Some(i) = internal {
        endpoints.push(("LOANHOST_INTERNAL_JWKS_URL", &i.jwks_url));
    }
    match endpoints.iter().find(|(_, u)| !u.starts_with("https://")) {
        Some((var, url)) => Err(err(
            var,
            format!("`{url}` is not https:// although LOANHOST_BASE_URL is"),
        )),
        None => Ok(()),
    }
}

/// The dev IdP's sign-in password (at least 12 characters), when one is set.
pub(super) fn dev_idp_password(src: &Source) -> Result<Option<Password>, ConfigError> {
    match src
        .get("LOANHOST_DEV_IDP_PASSWORD")
        .filter(|s| !s.is_empty())
    {
        Some(p) if p.chars().count() < 12 => Err(err(
            "LOANHOST_DEV_IDP_PASSWORD",
            "a sign-in password must have at least 12 characters",
        )),
        other => Ok(other.map(Password::new)),
    }
}

/// Whether the dev IdP's routes are mounted: asked for, on a loopback listener, behind a
/// public base URL only with a password, and only when it is the IdP configured.
pub(super) fn dev_idp(
    src: &Source,
    listen: SocketAddr,
    base_url: &str,
    password: Option<&Password>,
    upstream_is_dev: bool,
) -> Result<bool, ConfigError> {
    let on = src.boolean("LOANHOST_DEV_IDP")?;
    if on && !listen.ip().is_loopback() {
        return Err(err(
            "LOANHOST_DEV_IDP",
            format!(
                "the dev IdP signs in any demo user; it runs only on a loopback \
                 LOANHOST_LISTEN, not {listen}"
            ),
        ));
    }
    if on && !super::base_url_is_loopback(base_url) && password.is_none() {
        return Err(err(
            "LOANHOST_DEV_IDP",
            "behind a public LOANHOST_BASE_URL (one whose host is not loopback, http:// \
             or https://) the dev IdP signs in only with a password: set \
             LOANHOST_DEV_IDP_PASSWORD (at least 12 characters), or use a real IdP \
             (docs/clients.md)",
        ));
    }
    // Another IdP configured: the dev IdP's routes are not mounted at all.
    Ok(on && upstream_is_dev)
}

/// The lifetime of the dev IdP's tokens, in `1..=86400` seconds.
pub(super) fn dev_idp_token_ttl(src: &Source) -> Result<std::time::Duration, ConfigError> {
    let v = src.required("LOANHOST_DEV_IDP_TOKEN_TTL");
    match v.parse::<u64>() {
        Ok(s) if (1..=86_400).contains(&s) => Ok(std::time::Duration::from_secs(s)),
        _ => Err(err(
            "LOANHOST_DEV_IDP_TOKEN_TTL",
            format!("`{v}` is not a number of seconds in 1..=86400"),
        )),
    }
}

/// The limits that protect the server from its callers and its plugins.
pub(super) fn limits(src: &Source) -> Result<ServerLimits, ConfigError> {
    let number = |key: &str, max: u64| src.number(key, max);
    let count = |key: &str, max: u64| Ok::<u32, ConfigError>(src.number(key, max)? as u32);
    Ok(ServerLimits {
        header_timeout: src.seconds("LOANHOST_HEADER_TIMEOUT_SECS", 3600)?,
        request_timeout: src.seconds("LOANHOST_REQUEST_TIMEOUT_SECS", 3600)?,
        max_connections: count("LOANHOST_MAX_CONNECTIONS", 1_000_000)?,
        max_concurrent_requests: count("LOANHOST_MAX_CONCURRENT_REQUESTS", 100_000)?,
        body_timeout: src.seconds("LOANHOST_BODY_TIMEOUT_SECS", 3600)?,
        max_requests_per_address: count("LOANHOST_MAX_REQUESTS_PER_ADDRESS", 100_000)?,
        max_token_forwards: count("LOANHOST_MAX_TOKEN_FORWARDS", 100_000)?,
        max_batch: count("LOANHOST_MAX_BATCH", 1000)?,
        caller_max_concurrent: count("LOANHOST_CALLER_MAX_CONCURRENT", 1000)?,
        caller_calls_per_minute: count("LOANHOST_CALLER_CALLS_PER_MINUTE", 1_000_000)?,
        caller_plugin_seconds_per_minute: count(
            "LOANHOST_CALLER_PLUGIN_SECONDS_PER_MINUTE",
            100_000,
        )?,
        caller_result_mib_per_minute: count("LOANHOST_CALLER_RESULT_MIB_PER_MINUTE", 1_000_000)?,
        plugin_memory_mib: number("LOANHOST_PLUGIN_MEMORY_MIB", 65_536)?,
        plugin_log_lines_per_second: count("LOANHOST_PLUGIN_LOG_LINES_PER_SECOND", 1_000_000)?,
        heavy_queries: if src.required("LOANHOST_HEAVY_QUERIES").trim() == "auto" {
            0
        } else {
            count("LOANHOST_HEAVY_QUERIES", 64)?
        },
        compile_timeout: src.seconds("LOANHOST_COMPILE_TIMEOUT_SECS", 3600)?,
        compile_memory_mib: number("LOANHOST_COMPILE_MEMORY_MIB", 65_536)?,
        cache_max_mib: number("LOANHOST_CACHE_MAX_MIB", 1_048_576)?,
    })
}

/// The key that authenticates `cache_dir`: the one named, or `<cache dir>.key` beside it;
/// never inside it.
/// A file beside the cache directory: `<cache dir><suffix>`.
fn beside_cache(cache_dir: &Path, suffix: &str) -> PathBuf {
    let mut name = cache_dir
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_else(|| "cache".into());
    name.push(suffix);
    cache_dir.with_file_name(name)
}

/// `LOANHOST_AUDIT_KEY_FILE`, by default `<cache dir>.audit-key` beside the cache directory.
pub(super) fn audit_key_file(src: &Source, cache_dir: &Path) -> PathBuf {
    match src
        .get("LOANHOST_AUDIT_KEY_FILE")
        .filter(|f| !f.trim().is_empty())
    {
        Some(f) => PathBuf::from(f),
        None => beside_cache(cache_dir, ".audit-key"),
    }
}

pub(super) fn cache_key_file(src: &Source, cache_dir: &Path) -> Result<PathBuf, ConfigError> {
    let file = match src.get("LOANHOST_CACHE_KEY_FILE") {
        Some(f) => PathBuf::from(f),
        None => beside_cache(cache_dir, ".key"),
    };
    if file.starts_with(cache_dir) {
        return Err(err(
            "LOANHOST_CACHE_KEY_FILE",
            "must not be inside LOANHOST_CACHE_DIR: it authenticates that directory",
        ));
    }
    Ok(file)
}

/// The redirect URIs registered with the facade (each a redirect URI without user
/// information), and the authorization-response callback when it is on.
pub(super) fn redirects(
    src: &Source,
    cache_key_file: &Path,
) -> Result<(Vec<AllowedRedirect>, Option<AuthorizeCallback>), ConfigError> {
    let mut redirect_uris = Vec::new();
    for entry in src.list("LOANHOST_AUTHORIZE_REDIRECT_URIS") {
        let allowed = AllowedRedirect::parse(&entry);
        redirect_uri("LOANHOST_AUTHORIZE_REDIRECT_URIS", &allowed.uri)?;
        let url = url::Url::parse(&allowed.uri).expect("checked above");
        if !url.username().is_empty() || url.password().is_some() {
            return Err(err(
                "LOANHOST_AUTHORIZE_REDIRECT_URIS",
                format!("`{entry}` carries user information"),
            ));
        }
        redirect_uris.push(allowed);
    }
    let registered = redirect_uris.clone();
    let callback = if src.boolean("LOANHOST_AUTHORIZE_CALLBACK")? {
        Some(AuthorizeCallback {
            redirect_uris,
            key_file: match src.get("LOANHOST_AUTHORIZE_KEY_FILE") {
                Some(f) => PathBuf::from(f),
                None => cache_key_file.with_file_name("authorize.key"),
            },
        })
    } else {
        None
    };
    Ok((registered, callback))
}

/// How long a token may be past its lifetime, in `0..=300` seconds.
pub(super) fn token_leeway(src: &Source) -> Result<std::time::Duration, ConfigError> {
    let v = src.required("LOANHOST_TOKEN_LEEWAY_SECS");
    match v.trim().parse::<u64>() {
        Ok(n) if n <= 300 => Ok(std::time::Duration::from_secs(n)),
        _ => Err(err(
            "LOANHOST_TOKEN_LEEWAY_SECS",
            format!("`{v}` is not a whole number in 0..=300"),
        )),
    }
}

/// Where traces are exported (an http(s) URL), when they are.
pub(super) fn otlp_endpoint(src: &Source) -> Result<Option<String>, ConfigError> {
    match src.required("LOANHOST_OTLP_ENDPOINT").trim() {
        "" => Ok(None),
        v if v.starts_with("http://") || v.starts_with("https://") => Ok(Some(v.to_string())),
        v => Err(err(
            "LOANHOST_OTLP_ENDPOINT",
            format!("`{v}` is not an http(s) URL like http://127.0.0.1:4318/v1/traces"),
        )),
    }
}

/// The metrics listener's address, when it is on.
pub(super) fn metrics_listen(src: &Source) -> Result<Option<SocketAddr>, ConfigError> {
    match src.required("LOANHOST_METRICS_LISTEN").trim() {
        "" | "off" => Ok(None),
        v => Ok(Some(v.parse().map_err(|_| {
            err(
                "LOANHOST_METRICS_LISTEN",
                format!("`{v}` is not an address like 127.0.0.1:9464"),
            )
        })?)),
    }
}

/// How the host reaches registries: an auth file, a CA file, and the registries spoken over
/// plain HTTP, each on a loopback address.
pub(super) fn registry(src: &Source) -> Result<RegistryOptions, ConfigError> {
    let plain_http = src.list("LOANHOST_REGISTRY_PLAIN_HTTP");
    if let Some(bad) = plain_http.iter().find(|r| !is_loopback(r)) {
        return Err(err(
            "LOANHOST_REGISTRY_PLAIN_HTTP",
            format!(
                "`{bad}` is not on a loopback address: registries elsewhere are reached over https"
            ),
        ));
    }
    let path = |k: &str| src.get(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    Ok(RegistryOptions {
        auth_file: path("LOANHOST_REGISTRY_AUTH_FILE"),
        ca_file: path("LOANHOST_REGISTRY_CA_FILE"),
        plain_http,
    })
}

/// The registry references followed (each bound to one tool), and how often and how long.
pub(super) fn follow(src: &Source) -> Result<FollowOptions, ConfigError> {
    Ok(FollowOptions {
        references: {
            let refs = src.list("LOANHOST_PLUGIN_REFS");
            bind_all(&refs).map_err(|e| err("LOANHOST_PLUGIN_REFS", e))?;
            refs
        },
        deadline: src.seconds("LOANHOST_REGISTRY_TIMEOUT_SECS", 86_400)?,
        interval: src.seconds("LOANHOST_REGISTRY_INTERVAL_SECS", 86_400)?,
        allow_unsigned: src.boolean("LOANHOST_REGISTRY_ALLOW_UNSIGNED")?,
    })
}
