//! The validated configuration's types: the server's limits, the IdP's endpoints, the internal
//! scheme, the whole `Config`, and the error that names the variable at fault.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use time::Date;

/// The limits that protect the server from its callers and its plugins (each has a
/// `LOANHOST_*` variable; `docs/threat-model.md` says what happens when one is hit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// A connection must send its request headers within this time.
    pub header_timeout: std::time::Duration,
    /// A whole request must be answered within this time (else `408`).
    pub request_timeout: std::time::Duration,
    /// Open connections; further ones wait in the listen queue.
    pub max_connections: u32,
    /// Requests handled at once; more get `503` with `Retry-After`. A request takes its slot
    /// once its body has been read, so a slow body holds a connection, never a slot.
    pub max_concurrent_requests: u32,
    /// A request body must arrive whole within this time from the end of its headers (else
    /// `408`); unlike a per-chunk timeout, trickling bytes does not extend it.
    pub body_timeout: std::time::Duration,
    /// Requests one client address may have in flight on the unauthenticated endpoints (the
    /// OAuth facade, discovery, the REST token route before its token is checked); more get
    /// `429`.
    pub max_requests_per_address: u32,
    /// `/token` requests forwarded to the IdP at once; more get `503`
    /// `temporarily_unavailable`.
    pub max_token_forwards: u32,
    /// Messages in one JSON-RPC batch (2025-03-26).
    pub max_batch: u32,
    /// Tool calls one caller may have in flight.
    pub caller_max_concurrent: u32,
    /// Tool calls per caller per minute.
    pub caller_calls_per_minute: u32,
    /// Seconds of plugin time per caller per minute.
    pub caller_plugin_seconds_per_minute: u32,
    /// MiB of tool results per caller per minute.
    pub caller_result_mib_per_minute: u32,
    /// Linear memory of all plugin calls together, in MiB.
    pub plugin_memory_mib: u64,
    /// Plugin log lines written per second, host-wide.
    pub plugin_log_lines_per_second: u32,
    /// Organisation-wide report statements run at once (0, `auto`: half the cores, at least
    /// one); caller-scoped statements never wait for these.
    pub heavy_queries: u32,
    /// A component's compilation is stopped after this long.
    pub compile_timeout: std::time::Duration,
    /// The address space of the process that compiles a component, in MiB.
    pub compile_memory_mib: u64,
    /// Disk the compiled components in the cache directory may take, in MiB.
    pub cache_max_mib: u64,
}

/// Where components are compiled (`LOANHOST_COMPILER`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompilerSetting {
    /// Empty (the default): a worker process of this executable, when it is `loanhost`.
    ThisExecutable,
    /// A worker process of this `loanhost` binary.
    Program(PathBuf),
    /// `in-process`: on a thread of the server itself, without the worker's bounds.
    InProcess,
}

/// Which tools `tools/list` shows a caller (`LOANHOST_TOOLS_LIST`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ToolsList {
    /// `all` (the default): every tool served; a call the caller's roles cannot make is
    /// refused `forbidden:`.
    #[default]
    All,
    /// `callable`: only the tools the caller's roles may call; a call to another answers as
    /// an unknown tool does.
    Callable,
}

/// Whose the per-minute caller budgets are (`LOANHOST_CALLER_BUDGETS`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BudgetScope {
    /// `fleet` (the default): on PostgreSQL, leased from the fleet's ledger; on SQLite, the
    /// one host's.
    #[default]
    Fleet,
    /// `host`: each host's own.
    Host,
}

/// The upstream identity provider's endpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdpConfig {
    /// Exact `iss` of its tokens.
    pub issuer: String,
    /// Where `/authorize` redirects.
    pub authorize_url: String,
    /// Where `/token` forwards.
    pub token_url: String,
    /// Its signing keys.
    pub jwks_url: String,
    /// How the facade speaks to it.
    pub profile: IdpProfile,
}

/// How the facade rewrites a sign-in for the upstream IdP (`LOANHOST_IDP_PROFILE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdpProfile {
    /// `auth0`, the default: the specification's rewrite for an Auth0-shaped IdP. `/authorize`
    /// gets `audience` (the client's `resource` removed) and `offline_access` added to its
    /// scope; `/token` is forwarded as it is.
    Auth0,
    /// `oidc`: a standard OpenID Provider or OAuth 2.1 server (Okta, Entra ID, Keycloak, an
    /// OpenID Certified provider). The audience goes as RFC 8707's `resource`, at `/authorize`
    /// and, replacing the client's, at `/token`; where `offline_access` is added,
    /// `prompt=consent` is added too (OpenID Connect Core §11: an OP ignores `offline_access`
    /// without it).
    Oidc,
    /// `entra`: Microsoft Entra ID (v2 endpoints), which issues a token for an API only when
    /// the request names the API's scope and refuses RFC 8707's `resource`. At `/authorize`
    /// and `/token` the scope is `<audience>/.default` and `offline_access` (beside any
    /// OpenID Connect scope the client asked for; other scopes are not Entra's to read), and
    /// no `resource` or `audience` goes upstream. The issuer is one tenant's; the email is read
    /// from `upn`, then `preferred_username`, then `email` (unless `LOANHOST_EMAIL_CLAIM`
    /// names one); an audience `api://<application id>` also accepts tokens whose `aud` is
    /// that application id (Entra's v2 access tokens).
    Entra,
    /// `okta`: an Okta custom authorization server, whose tokens carry the audience it is
    /// configured with (it reads no `resource`) and which refuses a scope it does not define.
    /// At `/authorize` and `/token` the scope is the client's OpenID Connect scopes and
    /// `offline_access`; no `resource`, `audience` or `prompt` goes upstream. The issuer is a
    /// custom authorization server's (`https://<domain>/oauth2/<id>`): the org authorization
    /// server's tokens are for Okta's own APIs.
    Okta,
}

/// The facade's own callback for the IdP's authorization response
/// (`LOANHOST_AUTHORIZE_CALLBACK`): for IdPs that add RFC 9207's `iss` to it, which MCP
/// clients compare with loanhost's issuer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizeCallback {
    /// Client redirect URIs allowed besides loopback ones (exact strings), each for one
    /// client or for all. The IdP sees the facade's callback instead of the client's URI, so
    /// the facade checks the client's.
    pub redirect_uris: Vec<AllowedRedirect>,
    /// The key that seals the pending request in `state` and binds codes to redirect URIs.
    pub key_file: PathBuf,
}

/// One entry of `LOANHOST_AUTHORIZE_REDIRECT_URIS`: `client_id=uri` (the URI only for that
/// client), or a bare `uri` (for every client).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedRedirect {
    /// The client it is allowed for; `None`: every client.
    pub client_id: Option<String>,
    /// The redirect URI, exactly.
    pub uri: String,
}

impl AllowedRedirect {
    /// Reads one entry: before the first `=`, a client id when that part holds no `:` (a URI
    /// always has its scheme's `:` before any `=`).
    pub fn parse(entry: &str) -> AllowedRedirect {
        match entry.split_once('=') {
            Some((client, uri)) if !client.contains(':') && !client.is_empty() => AllowedRedirect {
                client_id: Some(client.trim().to_string()),
                uri: uri.trim().to_string(),
            },
            _ => AllowedRedirect {
                client_id: None,
                uri: entry.to_string(),
            },
        }
    }
}

/// The second, internal bearer scheme (routed by issuer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InternalScheme {
    /// Exact `iss` of internal tokens.
    pub issuer: String,
    /// Their signing keys.
    pub jwks_url: String,
}

/// A sign-in password: never printed, compared in constant time.
#[derive(Clone, PartialEq, Eq)]
pub struct Password(String);

impl Password {
    /// Wraps a password that the configuration has checked.
    pub fn new(password: String) -> Password {
        Password(password)
    }

    /// Whether `given` is the password (its SHA-256 compared with ring's constant-time check).
    pub fn matches(&self, given: &str) -> bool {
        use sha2::{Digest, Sha256};
        let (a, b) = (
            Sha256::digest(self.0.as_bytes()),
            Sha256::digest(given.as_bytes()),
        );
        #[allow(deprecated)]
        ring::constant_time::verify_slices_are_equal(&a, &b).is_ok()
    }
}

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Password(..)")
    }
}

/// The validated configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Where components are compiled.
    pub compiler: CompilerSetting,
    /// Bind address.
    pub listen: SocketAddr,
    /// Public origin, `{base_url}`, without a trailing slash.
    pub base_url: String,
    /// sqlx database URL.
    pub database_url: String,
    /// Deployed plugins.
    pub plugin_dir: PathBuf,
    /// Precompiled plugin cache.
    pub cache_dir: PathBuf,
    /// `{mcp_audience}`.
    pub mcp_audience: String,
    /// `{claims_namespace}`.
    pub claims_namespace: String,
    /// `{api_prefix}`, starting with `/`, no trailing slash.
    pub api_prefix: String,
    /// Upstream IdP (defaults to the embedded dev IdP under `{base_url}/dev-idp`).
    pub idp: IdpConfig,
    /// The facade's callback for the authorization response, when on.
    pub authorize_callback: Option<AuthorizeCallback>,
    /// `LOANHOST_AUTHORIZE_REDIRECT_URIS`: redirect URIs registered besides loopback ones
    /// (the facade's callback checks clients' against them; the dev IdP sends its demo client
    /// only to these, loopback ones and the facade's callback).
    pub registered_redirects: Vec<AllowedRedirect>,
    /// The internal scheme, when configured.
    pub internal: Option<InternalScheme>,
    /// The claim holding the email; `None`: `email`, then `{claims_namespace}/email`.
    pub email_claim: Option<String>,
    /// Serve the embedded dev IdP.
    pub dev_idp: bool,
    /// The password the dev IdP's sign-in asks for; `None`: none (loopback only).
    pub dev_idp_password: Option<Password>,
    /// Lifetime of the dev IdP's access tokens.
    pub dev_idp_token_ttl: std::time::Duration,
    /// Fixed "today".
    pub today: Option<Date>,
    /// Refuse unsigned plugins.
    pub require_signed_plugins: bool,
    /// Trusted minisign public keys.
    pub trusted_keys: Vec<String>,
    /// How plugin registries are reached (credentials, TLS roots, loopback plain HTTP).
    pub registry: RegistryOptions,
    /// Registry references followed, and how often.
    pub follow: FollowOptions,
    /// Browser origins allowed to call `/mcp` besides `{base_url}` itself.
    pub allowed_origins: Vec<String>,
    /// Refuse tokens without `email_verified: true` (an explicit `false` is always refused).
    pub require_email_verified: bool,
    /// Clock skew tolerated on a token's `exp` and `nbf`.
    pub token_leeway: std::time::Duration,
    /// Where audit lines go: `stdout`, `off`, or a file path.
    pub audit_log: String,
    /// The key that seals audit lines.
    pub audit_key_file: PathBuf,
    /// How often the audit chain's last line is anchored in PostgreSQL.
    pub audit_anchor_every: std::time::Duration,
    /// Which tools `tools/list` shows a caller.
    pub tools_list: ToolsList,
    /// Whose the per-minute caller budgets are.
    pub caller_budgets: BudgetScope,
    /// The separate address of `GET /metrics` (none: no metrics listener).
    pub metrics_listen: Option<SocketAddr>,
    /// Where spans are exported (OTLP over HTTP), if anywhere. The `loanhost` binary sets
    /// tracing up from this variable before reading the rest.
    pub otlp_endpoint: Option<String>,
    /// The key that authenticates precompiled plugins (outside `cache_dir`).
    pub cache_key_file: PathBuf,
    /// Request, caller and plugin limits.
    pub limits: ServerLimits,
}

/// A setting that was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable}: {message}")]
pub struct ConfigError {
    /// The variable (or file) at fault.
    pub variable: String,
    /// What is wrong.
    pub message: String,
}

pub(super) fn err(variable: &str, message: impl Into<String>) -> ConfigError {
    ConfigError {
        variable: variable.to_string(),
        message: message.into(),
    }
}

/// How to reach registries: where credentials and extra TLS roots are, and which loopback
/// registries speak plain HTTP.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistryOptions {
    /// An auth file in the containers/Docker format (`{"auths": {"host:port": {"auth": …}}}`);
    /// `None`: `REGISTRY_AUTH_FILE`, `$XDG_RUNTIME_DIR/containers/auth.json`,
    /// `~/.docker/config.json`, the first that exists.
    pub auth_file: Option<PathBuf>,
    /// PEM certificates trusted besides the system's roots.
    pub ca_file: Option<PathBuf>,
    /// Registries (`host:port`) spoken over plain HTTP; each must be on a loopback address.
    pub plain_http: Vec<String>,
}

/// What a host follows, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowOptions {
    /// `oci://…:tag`, `oci://…@sha256:…`, or either as `<tool>=oci://…` (checked by
    /// [`crate::references::bind_all`]).
    pub references: Vec<String>,
    /// How often tags are resolved again.
    pub interval: Duration,
    /// Serve artifacts whose files are not signed by a trusted key (off: refused).
    pub allow_unsigned: bool,
    /// The most one reference's round (resolve, pull and load) may take.
    pub deadline: Duration,
}

impl Default for FollowOptions {
    fn default() -> Self {
        FollowOptions {
            references: Vec::new(),
            interval: Duration::from_secs(60),
            allow_unsigned: false,
            deadline: Duration::from_secs(600),
        }
    }
}
