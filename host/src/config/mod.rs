//! Configuration: `LOANHOST_*` environment variables, or a TOML file with the same keys in
//! lower case without the prefix (the environment wins). Unknown or malformed settings stop
//! start-up with a message naming the variable.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use crate::config::settings::err;
use crate::config::source::Source;
use crate::config::values::{http_url, non_empty, read_toml};

pub mod reference;
mod sections;
mod settings;
mod source;
mod values;
pub use settings::{
    AllowedRedirect, AuthorizeCallback, BudgetScope, CompilerSetting, Config, ConfigError,
    FollowOptions, IdpConfig, IdpProfile, InternalScheme, Password, RegistryOptions, ServerLimits,
    ToolsList,
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

    /// Builds a configuration from `LOANHOST_*` key/value pairs. The first setting at fault
    /// is named, in the order below.
    pub fn from_map(map: &BTreeMap<String, String>) -> Result<Config, ConfigError> {
        let src = Source::new(map)?;
        let listen_s = src.required("LOANHOST_LISTEN");
        let listen: SocketAddr = listen_s.parse().map_err(|_| {
            err(
                "LOANHOST_LISTEN",
                format!("`{listen_s}` is not an address like 127.0.0.1:8080"),
            )
        })?;
        let base_url = http_url("LOANHOST_BASE_URL", &src.required("LOANHOST_BASE_URL"))?;
        let database_url = src.required("LOANHOST_DATABASE_URL");
        if !(database_url.starts_with("sqlite:")
            || database_url.starts_with("postgres://")
            || database_url.starts_with("postgresql://"))
        {
            return Err(err(
                "LOANHOST_DATABASE_URL",
                format!("`{database_url}` is neither a sqlite: nor a postgres:// URL"),
            ));
        }
        let non_empty = |key: &str| non_empty(key, src.required(key));
        let mcp_audience = non_empty("LOANHOST_MCP_AUDIENCE")?;
        let claims_namespace = non_empty("LOANHOST_CLAIMS_NAMESPACE")?
            .trim_end_matches('/')
            .to_string();
        let api_prefix = src.required("LOANHOST_API_PREFIX");
        if !api_prefix.starts_with('/') || (api_prefix.len() > 1 && api_prefix.ends_with('/')) {
            return Err(err(
                "LOANHOST_API_PREFIX",
                format!("`{api_prefix}` must start with / and not end with /"),
            ));
        }
        let dev = format!("{base_url}/dev-idp");
        let idp = sections::idp(&src, &dev)?;
        let internal = sections::internal(&src, &idp)?;
        sections::https_behind_https(&base_url, &idp, internal.as_ref())?;
        let today = match src.get("LOANHOST_TODAY") {
            None => None,
            Some(s) => Some(parse_date(&s).ok_or_else(|| {
                err(
                    "LOANHOST_TODAY",
                    format!("`{s}` is not a date like 2026-01-31"),
                )
            })?),
        };
        let dev_idp_password = sections::dev_idp_password(&src)?;
        let dev_idp = sections::dev_idp(
            &src,
            listen,
            &base_url,
            dev_idp_password.as_ref(),
            idp.issuer == dev,
        )?;
        let limits = sections::limits(&src)?;
        let compiler = match src.required("LOANHOST_COMPILER").trim() {
            "" => CompilerSetting::ThisExecutable,
            "in-process" => CompilerSetting::InProcess,
            path => CompilerSetting::Program(PathBuf::from(path)),
        };
        let cache_dir = PathBuf::from(src.required("LOANHOST_CACHE_DIR"));
        let cache_key_file = sections::cache_key_file(&src, &cache_dir)?;
        let audit_key_file = sections::audit_key_file(&src, &cache_dir);
        let (registered_redirects, authorize_callback) =
            sections::redirects(&src, &cache_key_file)?;
        Ok(Config {
            registered_redirects,
            compiler,
            listen,
            base_url,
            database_url,
            plugin_dir: PathBuf::from(src.required("LOANHOST_PLUGIN_DIR")),
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
            email_claim: src.get("LOANHOST_EMAIL_CLAIM").filter(|s| !s.is_empty()),
            dev_idp,
            dev_idp_password,
            dev_idp_token_ttl: sections::dev_idp_token_ttl(&src)?,
            today,
            require_signed_plugins: src.boolean("LOANHOST_REQUIRE_SIGNED_PLUGINS")?,
            trusted_keys: src.list("LOANHOST_TRUSTED_KEYS"),
            registry: sections::registry(&src)?,
            follow: sections::follow(&src)?,
            allowed_origins: src.list("LOANHOST_ALLOWED_ORIGINS"),
            require_email_verified: src.boolean("LOANHOST_REQUIRE_EMAIL_VERIFIED")?,
            token_leeway: sections::token_leeway(&src)?,
            audit_log: src.required("LOANHOST_AUDIT_LOG"),
            audit_key_file,
            audit_anchor_every: src.seconds("LOANHOST_AUDIT_ANCHOR_SECS", 3600)?,
            tools_list: match src.required("LOANHOST_TOOLS_LIST").trim() {
                "all" => ToolsList::All,
                "callable" => ToolsList::Callable,
                other => {
                    return Err(err(
                        "LOANHOST_TOOLS_LIST",
                        format!("`{other}` is not `all` or `callable`"),
                    ))
                }
            },
            caller_budgets: match src.required("LOANHOST_CALLER_BUDGETS").trim() {
                "fleet" => BudgetScope::Fleet,
                "host" => BudgetScope::Host,
                other => {
                    return Err(err(
                        "LOANHOST_CALLER_BUDGETS",
                        format!("`{other}` is not `fleet` or `host`"),
                    ))
                }
            },
            otlp_endpoint: sections::otlp_endpoint(&src)?,
            metrics_listen: sections::metrics_listen(&src)?,
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
