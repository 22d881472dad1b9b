//! Configuration: `LOANHOST_*` environment variables, or a TOML file with the same keys in
//! lower case without the prefix (the environment wins). Unknown or malformed settings stop
//! start-up with a message naming the variable.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use crate::config::settings::err;
use crate::config::values::{boolean, http_url, list, non_empty, read_toml, redirect_uri};

pub mod reference;
mod settings;
mod values;
pub use settings::{
    AllowedRedirect, AuthorizeCallback, CompilerSetting, Config, ConfigError, IdpConfig,
    IdpProfile, InternalScheme, Password, ServerLimits,
};
pub use values::parse_date;

impl Default for Config {
    fn default() -> Self {
        Config::from_map(&BTreeMap::new()).expect("the defaults are valid")
    }
}

impl Config {
    /// Reads the process environment, over an optional TOML file.
    pub fn load(file: Option<&Path>) -> Result<Config, ConfigError> {
        let mut map = match file {
            Some(path) => read_toml(path)?,
            None => BTreeMap::new(),
        };
        for (k, v) in std::env::vars() {
            if k.starts_with("LOANHOST_") {
                map.insert(k, v);
            }
        }
        Config::from_map(&map)
    }

    /// Builds a configuration from `LOANHOST_*` key/value pairs.
    pub fn from_map(map: &BTreeMap<String, String>) -> Result<Config, ConfigError> {
        let settings = reference::SETTINGS;
        for key in map.keys() {
            if !settings.iter().any(|s| s.name == key) {
                return Err(err(key, "unknown configuration variable"));
            }
        }
        let get = |key: &str| -> Option<String> {
            map.get(key).cloned().or_else(|| {
                settings
                    .iter()
                    .find(|s| s.name == key)
                    .and_then(|s| s.default.map(str::to_string))
            })
        };
        let required = |key: &str| get(key).expect("has a default");

        let listen_s = required("LOANHOST_LISTEN");
        let listen: SocketAddr = listen_s.parse().map_err(|_| {
            err(
                "LOANHOST_LISTEN",
                format!("`{listen_s}` is not an address like 127.0.0.1:8080"),
            )
        })?;
        let base_url = http_url("LOANHOST_BASE_URL", &required("LOANHOST_BASE_URL"))?;
        let database_url = required("LOANHOST_DATABASE_URL");
        if !(database_url.starts_with("sqlite:")
            || database_url.starts_with("postgres://")
            || database_url.starts_with("postgresql://"))
        {
            return Err(err(
                "LOANHOST_DATABASE_URL",
                format!("`{database_url}` is neither a sqlite: nor a postgres:// URL"),
            ));
        }
        let mcp_audience = non_empty("LOANHOST_MCP_AUDIENCE", required("LOANHOST_MCP_AUDIENCE"))?;
        let claims_namespace = non_empty(
            "LOANHOST_CLAIMS_NAMESPACE",
            required("LOANHOST_CLAIMS_NAMESPACE"),
        )?
        .trim_end_matches('/')
        .to_string();
        let api_prefix = required("LOANHOST_API_PREFIX");
        if !api_prefix.starts_with('/') || (api_prefix.len() > 1 && api_prefix.ends_with('/')) {
            return Err(err(
                "LOANHOST_API_PREFIX",
                format!("`{api_prefix}` must start with / and not end with /"),
            ));
        }
        let dev = format!("{base_url}/dev-idp");
        let idp = IdpConfig {
            issuer: get("LOANHOST_IDP_ISSUER").unwrap_or_else(|| dev.clone()),
            authorize_url: match get("LOANHOST_IDP_AUTHORIZE_URL") {
                Some(u) => http_url("LOANHOST_IDP_AUTHORIZE_URL", &u)?,
                None => format!("{dev}/authorize"),
            },
            token_url: match get("LOANHOST_IDP_TOKEN_URL") {
                Some(u) => http_url("LOANHOST_IDP_TOKEN_URL", &u)?,
                None => format!("{dev}/token"),
            },
            jwks_url: match get("LOANHOST_IDP_JWKS_URL") {
                Some(u) => http_url("LOANHOST_IDP_JWKS_URL", &u)?,
                None => format!("{dev}/jwks"),
            },
            profile: match required("LOANHOST_IDP_PROFILE").trim() {
                "auth0" => IdpProfile::Auth0,
                "oidc" => IdpProfile::Oidc,
                other => {
                    return Err(err(
                        "LOANHOST_IDP_PROFILE",
                        format!("`{other}` is neither auth0 (the default) nor oidc"),
                    ))
                }
            },
        };
        let internal = match (
            get("LOANHOST_INTERNAL_ISSUER"),
            get("LOANHOST_INTERNAL_JWKS_URL"),
        ) {
            (None, None) => None,
            (Some(issuer), Some(jwks)) => {
                if issuer == idp.issuer {
                    return Err(err(
                        "LOANHOST_INTERNAL_ISSUER",
                        "must differ from the IdP issuer: schemes are routed by issuer",
                    ));
                }
                Some(InternalScheme {
                    issuer,
                    jwks_url: http_url("LOANHOST_INTERNAL_JWKS_URL", &jwks)?,
                })
            }
            (Some(_), None) => {
                return Err(err(
                    "LOANHOST_INTERNAL_JWKS_URL",
                    "must be set with LOANHOST_INTERNAL_ISSUER",
                ))
            }
            (None, Some(_)) => {
                return Err(err(
                    "LOANHOST_INTERNAL_ISSUER",
                    "must be set with LOANHOST_INTERNAL_JWKS_URL",
                ))
            }
        };
        if base_url.starts_with("https://") {
            // Behind an https:// base URL, a plain-http IdP endpoint would carry client
            // secrets and codes in clear, or let anyone on the path swap the signing keys.
            let mut endpoints = vec![
                ("LOANHOST_IDP_AUTHORIZE_URL", &idp.authorize_url),
                ("LOANHOST_IDP_TOKEN_URL", &idp.token_url),
                ("LOANHOST_IDP_JWKS_URL", &idp.jwks_url),
            ];
            if let Some(i) = &internal {
                endpoints.push(("LOANHOST_INTERNAL_JWKS_URL", &i.jwks_url));
            }
            if let Some((var, url)) = endpoints.iter().find(|(_, u)| !u.starts_with("https://")) {
                return Err(err(
                    var,
                    format!("`{url}` is not https:// although LOANHOST_BASE_URL is"),
                ));
            }
        }
        let today = match get("LOANHOST_TODAY") {
            None => None,
            Some(s) => Some(parse_date(&s).ok_or_else(|| {
                err(
                    "LOANHOST_TODAY",
                    format!("`{s}` is not a date like 2026-01-31"),
                )
            })?),
        };
        let dev_idp_password = match get("LOANHOST_DEV_IDP_PASSWORD").filter(|s| !s.is_empty()) {
            Some(p) if p.chars().count() < 12 => {
                return Err(err(
                    "LOANHOST_DEV_IDP_PASSWORD",
                    "a sign-in password must have at least 12 characters",
                ))
            }
            other => other.map(Password::new),
        };
        let dev_idp = {
            let on = boolean("LOANHOST_DEV_IDP", &required("LOANHOST_DEV_IDP"))?;
            if on && !listen.ip().is_loopback() {
                return Err(err(
                    "LOANHOST_DEV_IDP",
                    format!(
                        "the dev IdP signs in any demo user; it runs only on a loopback \
                         LOANHOST_LISTEN, not {listen}"
                    ),
                ));
            }
            if on && !base_url_is_loopback(&base_url) && dev_idp_password.is_none() {
                return Err(err(
                    "LOANHOST_DEV_IDP",
                    "behind a public LOANHOST_BASE_URL (one whose host is not loopback, http:// \
                     or https://) the dev IdP signs in only with a password: set \
                     LOANHOST_DEV_IDP_PASSWORD (at least 12 characters), or use a real IdP \
                     (docs/clients.md)",
                ));
            }
            // Another IdP configured: the dev IdP's routes are not mounted at all.
            on && idp.issuer == dev
        };
        let number = |key: &str, max: u64| -> Result<u64, ConfigError> {
            let v = required(key);
            match v.trim().parse::<u64>() {
                Ok(n) if (1..=max).contains(&n) => Ok(n),
                _ => Err(err(
                    key,
                    format!("`{v}` is not a whole number in 1..={max}"),
                )),
            }
        };
        let limits = ServerLimits {
            header_timeout: std::time::Duration::from_secs(number(
                "LOANHOST_HEADER_TIMEOUT_SECS",
                3600,
            )?),
            request_timeout: std::time::Duration::from_secs(number(
                "LOANHOST_REQUEST_TIMEOUT_SECS",
                3600,
            )?),
            max_connections: number("LOANHOST_MAX_CONNECTIONS", 1_000_000)? as u32,
            max_concurrent_requests: number("LOANHOST_MAX_CONCURRENT_REQUESTS", 100_000)? as u32,
            body_timeout: std::time::Duration::from_secs(number(
                "LOANHOST_BODY_TIMEOUT_SECS",
                3600,
            )?),
            max_requests_per_address: number("LOANHOST_MAX_REQUESTS_PER_ADDRESS", 100_000)? as u32,
            max_token_forwards: number("LOANHOST_MAX_TOKEN_FORWARDS", 100_000)? as u32,
            max_batch: number("LOANHOST_MAX_BATCH", 1000)? as u32,
            caller_max_concurrent: number("LOANHOST_CALLER_MAX_CONCURRENT", 1000)? as u32,
            caller_calls_per_minute: number("LOANHOST_CALLER_CALLS_PER_MINUTE", 1_000_000)? as u32,
            caller_plugin_seconds_per_minute: number(
                "LOANHOST_CALLER_PLUGIN_SECONDS_PER_MINUTE",
                100_000,
            )? as u32,
            caller_result_mib_per_minute: number(
                "LOANHOST_CALLER_RESULT_MIB_PER_MINUTE",
                1_000_000,
            )? as u32,
            plugin_memory_mib: number("LOANHOST_PLUGIN_MEMORY_MIB", 65_536)?,
            plugin_log_lines_per_second: number("LOANHOST_PLUGIN_LOG_LINES_PER_SECOND", 1_000_000)?
                as u32,
            heavy_queries: if required("LOANHOST_HEAVY_QUERIES").trim() == "auto" {
                0
            } else {
                number("LOANHOST_HEAVY_QUERIES", 64)? as u32
            },
            compile_timeout: std::time::Duration::from_secs(number(
                "LOANHOST_COMPILE_TIMEOUT_SECS",
                3600,
            )?),
            compile_memory_mib: number("LOANHOST_COMPILE_MEMORY_MIB", 65_536)?,
            cache_max_mib: number("LOANHOST_CACHE_MAX_MIB", 1_048_576)?,
        };
        let compiler = match required("LOANHOST_COMPILER").trim() {
            "" => CompilerSetting::ThisExecutable,
            "in-process" => CompilerSetting::InProcess,
            path => CompilerSetting::Program(PathBuf::from(path)),
        };
        let cache_dir = PathBuf::from(required("LOANHOST_CACHE_DIR"));
        let cache_key_file = match get("LOANHOST_CACHE_KEY_FILE") {
            Some(f) => PathBuf::from(f),
            None => {
                let mut name = cache_dir
                    .file_name()
                    .map(|n| n.to_os_string())
                    .unwrap_or_else(|| "cache".into());
                name.push(".key");
                cache_dir.with_file_name(name)
            }
        };
        if cache_key_file.starts_with(&cache_dir) {
            return Err(err(
                "LOANHOST_CACHE_KEY_FILE",
                "must not be inside LOANHOST_CACHE_DIR: it authenticates that directory",
            ));
        }
        let mut redirect_uris = Vec::new();
        for entry in list(&required("LOANHOST_AUTHORIZE_REDIRECT_URIS")) {
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
        let registered_redirects = redirect_uris.clone();
        let authorize_callback = if boolean(
            "LOANHOST_AUTHORIZE_CALLBACK",
            &required("LOANHOST_AUTHORIZE_CALLBACK"),
        )? {
            Some(AuthorizeCallback {
                redirect_uris,
                key_file: match get("LOANHOST_AUTHORIZE_KEY_FILE") {
                    Some(f) => PathBuf::from(f),
                    None => cache_key_file.with_file_name("authorize.key"),
                },
            })
        } else {
            None
        };
        Ok(Config {
            registered_redirects,
            compiler,
            listen,
            base_url,
            database_url,
            plugin_dir: PathBuf::from(required("LOANHOST_PLUGIN_DIR")),
            cache_dir,
            mcp_audience,
            claims_namespace,
            api_prefix: if api_prefix == "/" {
                String::new()
            } else {
                api_prefix
            },
            idp,
            authorize_callback,
            internal,
            email_claim: get("LOANHOST_EMAIL_CLAIM").filter(|s| !s.is_empty()),
            dev_idp,
            dev_idp_password,
            dev_idp_token_ttl: {
                let v = required("LOANHOST_DEV_IDP_TOKEN_TTL");
                match v.parse::<u64>() {
                    Ok(s) if (1..=86_400).contains(&s) => std::time::Duration::from_secs(s),
                    _ => {
                        return Err(err(
                            "LOANHOST_DEV_IDP_TOKEN_TTL",
                            format!("`{v}` is not a number of seconds in 1..=86400"),
                        ))
                    }
                }
            },
            today,
            require_signed_plugins: boolean(
                "LOANHOST_REQUIRE_SIGNED_PLUGINS",
                &required("LOANHOST_REQUIRE_SIGNED_PLUGINS"),
            )?,
            trusted_keys: list(&required("LOANHOST_TRUSTED_KEYS")),
            registry: {
                let plain_http = list(&required("LOANHOST_REGISTRY_PLAIN_HTTP"));
                if let Some(bad) = plain_http
                    .iter()
                    .find(|r| !crate::plugins::catalog::oci::is_loopback(r))
                {
                    return Err(err(
                        "LOANHOST_REGISTRY_PLAIN_HTTP",
                        format!("`{bad}` is not on a loopback address: registries elsewhere are reached over https"),
                    ));
                }
                let path = |k: &str| get(k).filter(|v| !v.is_empty()).map(PathBuf::from);
                crate::plugins::catalog::oci::RegistryOptions {
                    auth_file: path("LOANHOST_REGISTRY_AUTH_FILE"),
                    ca_file: path("LOANHOST_REGISTRY_CA_FILE"),
                    plain_http,
                }
            },
            follow: crate::plugins::catalog::follow::FollowOptions {
                references: {
                    let refs = list(&required("LOANHOST_PLUGIN_REFS"));
                    crate::plugins::catalog::follow::bind_all(&refs)
                        .map_err(|e| err("LOANHOST_PLUGIN_REFS", e))?;
                    refs
                },
                deadline: std::time::Duration::from_secs(number(
                    "LOANHOST_REGISTRY_TIMEOUT_SECS",
                    86_400,
                )?),
                interval: std::time::Duration::from_secs(number(
                    "LOANHOST_REGISTRY_INTERVAL_SECS",
                    86_400,
                )?),
                allow_unsigned: boolean(
                    "LOANHOST_REGISTRY_ALLOW_UNSIGNED",
                    &required("LOANHOST_REGISTRY_ALLOW_UNSIGNED"),
                )?,
            },
            allowed_origins: list(&required("LOANHOST_ALLOWED_ORIGINS")),
            require_email_verified: boolean(
                "LOANHOST_REQUIRE_EMAIL_VERIFIED",
                &required("LOANHOST_REQUIRE_EMAIL_VERIFIED"),
            )?,
            token_leeway: {
                let v = required("LOANHOST_TOKEN_LEEWAY_SECS");
                match v.trim().parse::<u64>() {
                    Ok(n) if n <= 300 => std::time::Duration::from_secs(n),
                    _ => {
                        return Err(err(
                            "LOANHOST_TOKEN_LEEWAY_SECS",
                            format!("`{v}` is not a whole number in 0..=300"),
                        ))
                    }
                }
            },
            audit_log: required("LOANHOST_AUDIT_LOG"),
            otlp_endpoint: match required("LOANHOST_OTLP_ENDPOINT").trim() {
                "" => None,
                v if v.starts_with("http://") || v.starts_with("https://") => Some(v.to_string()),
                v => {
                    return Err(err(
                        "LOANHOST_OTLP_ENDPOINT",
                        format!("`{v}` is not an http(s) URL like http://127.0.0.1:4318/v1/traces"),
                    ))
                }
            },
            metrics_listen: match required("LOANHOST_METRICS_LISTEN").trim() {
                "" | "off" => None,
                v => Some(v.parse().map_err(|_| {
                    err(
                        "LOANHOST_METRICS_LISTEN",
                        format!("`{v}` is not an address like 127.0.0.1:9464"),
                    )
                })?),
            },
            cache_key_file,
            limits,
        })
    }
}

#[cfg(test)]
mod tests;

/// Whether `base_url`'s host is this machine (`127.0.0.0/8`, `[::1]`, `localhost`): a base
/// URL whose host is anything else may be reached by others (a tunnel, a proxy), whatever its
/// scheme.
pub fn base_url_is_loopback(base_url: &str) -> bool {
    match url::Url::parse(base_url)
        .ok()
        .and_then(|u| u.host().map(|h| h.to_owned()))
    {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}
