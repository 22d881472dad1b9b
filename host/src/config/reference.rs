//! The settings reference: every `LOANHOST_*` variable with its group, default and meaning,
//! from which `docs/configuration.md` is generated; a test keeps the page equal to it
//! (`UPDATE_DOCS=1 cargo test -p loanhost --lib config::tests` writes it again).

/// The groups an operator looks for a setting in, in the page's order.
pub const GROUPS: &[(&str, &str)] = &[
    ("network", "Network and limits"),
    ("identity", "Identity"),
    ("data", "Data"),
    ("plugins", "Plugins"),
    ("observability", "Observability"),
];

/// One setting: its name, its group, its default (`None`: unset) and what it means (its range
/// included).
pub struct Setting {
    /// `LOANHOST_…`.
    pub name: &'static str,
    /// One of [`GROUPS`].
    pub group: &'static str,
    /// The value when it is not set; `None`: unset.
    pub default: Option<&'static str>,
    /// What it does, its accepted values, and what happens at its limit.
    pub meaning: &'static str,
}

const fn s(
    name: &'static str,
    group: &'static str,
    default: Option<&'static str>,
    meaning: &'static str,
) -> Setting {
    Setting {
        name,
        group,
        default,
        meaning,
    }
}

/// Every setting the server reads.
pub const SETTINGS: &[Setting] = &[
    s("LOANHOST_LISTEN", "network", Some("127.0.0.1:8080"), "The address the server binds (`host:port`)."),
    s("LOANHOST_BASE_URL", "network", Some("http://127.0.0.1:8080"), "The public origin clients use (`{base_url}`): it names the resource, the OAuth endpoints and the callback. Behind a TLS proxy, its `https://` URL."),
    s("LOANHOST_API_PREFIX", "network", Some("/api"), "The REST API's path prefix (`{api_prefix}`): the OpenAPI description and `POST {api_prefix}/oauth/token`."),
    s("LOANHOST_ALLOWED_ORIGINS", "network", Some(""), "Browser origins allowed to call `/mcp` besides `{base_url}` itself (comma-separated); any other `Origin` is `403`."),
    s("LOANHOST_HEADER_TIMEOUT_SECS", "network", Some("10"), "Request headers must arrive within this many seconds, and a kept-alive connection may sit idle this long (1..=3600)."),
    s("LOANHOST_REQUEST_TIMEOUT_SECS", "network", Some("75"), "A whole request must be answered within this many seconds, else `408` (1..=3600)."),
    s("LOANHOST_BODY_TIMEOUT_SECS", "network", Some("10"), "A request body must arrive whole within this many seconds of its headers, else `408` (1..=3600)."),
    s("LOANHOST_MAX_CONNECTIONS", "network", Some("1024"), "Open connections; further ones wait in the kernel's listen queue (1..=1000000)."),
    s("LOANHOST_MAX_CONCURRENT_REQUESTS", "network", Some("128"), "Requests handled at once; more are `503` with `Retry-After: 1` (1..=100000)."),
    s("LOANHOST_MAX_REQUESTS_PER_ADDRESS", "network", Some("16"), "Requests in flight from one client address on the unauthenticated endpoints; more are `429` (1..=100000). Behind a proxy, raise it or cap per client there."),
    s("LOANHOST_MAX_TOKEN_FORWARDS", "network", Some("32"), "`/token` requests forwarded to the IdP at once; more are `503` (1..=100000)."),
    s("LOANHOST_TOOLS_LIST", "network", Some("all"), "Which tools `tools/list` shows a caller: `all` (every tool, as `docs/design.md` §6 decides; a call the caller's roles cannot make is refused `forbidden:` naming the roles) or `callable` (only the tools the caller's roles may call, in name order, the same on every host and connection; a call to another answers as an unknown tool does). Views are always listed only to callers who may call their tool."),
    s("LOANHOST_MAX_BATCH", "network", Some("16"), "Messages in one JSON-RPC batch (protocol 2025-03-26); more are `400` (1..=1000)."),
    s("LOANHOST_CALLER_MAX_CONCURRENT", "network", Some("4"), "Tool calls one caller may have in flight; more are `429` (1..=1000)."),
    s("LOANHOST_CALLER_CALLS_PER_MINUTE", "network", Some("600"), "Requests per caller per minute, every method counted, bursts of ten seconds' worth; more are `429` (1..=1000000)."),
    s("LOANHOST_CALLER_PLUGIN_SECONDS_PER_MINUTE", "network", Some("60"), "Seconds of plugin time per caller per minute (wall time, database included, and fresh memory at 20 ms a MiB); more are `429` (1..=100000)."),
    s("LOANHOST_CALLER_RESULT_MIB_PER_MINUTE", "network", Some("24"), "MiB of replies per caller per minute (tool results, view reads, lists); more are `429` (1..=1000000)."),
    s("LOANHOST_CALLER_BUDGETS", "network", Some("fleet"), "Whose the per-minute budgets are: `fleet` (on PostgreSQL, every host on the database leases slices of one budget per caller, so a caller gets their budget once across the fleet, within one slice per host, a tenth of ten seconds' worth; a host that cannot read it grants only its share, `1/hosts`, of the refill; on SQLite, the one host's) or `host` (each host's own: behind N hosts up to N times). See `docs/decisions/0048-budgets-leased-from-the-fleet.md`."),
    s("LOANHOST_MCP_AUDIENCE", "identity", Some("https://loanhost.local/mcp"), "The `aud` access tokens must carry (`{mcp_audience}`): the identifier of the API registered for loanhost at the IdP."),
    s("LOANHOST_CLAIMS_NAMESPACE", "identity", Some("https://loanhost.local"), "The namespace of custom claims (`{claims_namespace}/email`)."),
    s("LOANHOST_EMAIL_CLAIM", "identity", None, "The access token's claim holding the email; unset: `email`, then `{claims_namespace}/email`."),
    s("LOANHOST_REQUIRE_EMAIL_VERIFIED", "identity", Some("false"), "Refuse tokens whose paired `email_verified` claim is absent (`false` or `\"false\"` are always refused)."),
    s("LOANHOST_TOKEN_LEEWAY_SECS", "identity", Some("30"), "Clock skew tolerated on a token's `exp` and `nbf`, in seconds (0..=300)."),
    s("LOANHOST_IDP_ISSUER", "identity", None, "The upstream IdP's exact `iss`; unset: the embedded dev IdP's (`{base_url}/dev-idp`)."),
    s("LOANHOST_IDP_AUTHORIZE_URL", "identity", None, "The IdP's authorization endpoint; unset: the dev IdP's."),
    s("LOANHOST_IDP_TOKEN_URL", "identity", None, "The IdP's token endpoint; unset: the dev IdP's."),
    s("LOANHOST_IDP_JWKS_URL", "identity", None, "The IdP's key set; unset: the dev IdP's. Keys loanhost does not verify with are skipped."),
    s("LOANHOST_IDP_PROFILE", "identity", Some("auth0"), "How the facade speaks to the IdP: `auth0` (the specification's rewrite: `audience`), `oidc` (a standard OpenID Provider: RFC 8707 `resource` at `/authorize` and `/token`, and `prompt=consent`) `entra` (Microsoft Entra ID: the scope `<audience>/.default` and `offline_access` at `/authorize` and `/token`, no `resource`, one tenant's issuer, the email from `upn`, `preferred_username` or `email`) or `okta` (an Okta custom authorization server: the client's OpenID Connect scopes and `offline_access`, no `resource`, `audience` or `prompt`, an issuer `https://<domain>/oauth2/<id>`)."),
    s("LOANHOST_AUTHORIZE_CALLBACK", "identity", Some("false"), "The IdP answers `{base_url}/authorize/callback`, which checks its RFC 9207 `iss` and passes the code on, encrypted and bound to the client's redirect URI."),
    s("LOANHOST_AUTHORIZE_REDIRECT_URIS", "identity", Some(""), "Client redirect URIs allowed besides loopback ones, `client_id=uri` (for that client) or `uri` (for every client), comma-separated: checked by the facade's callback when it is on, and by the dev IdP for its demo client `loanhost-demo` (a hosted client such as Claude's connector names its own, e.g. `https://claude.ai/api/mcp/auth_callback`)."),
    s("LOANHOST_AUTHORIZE_KEY_FILE", "identity", None, "The callback's key (32 random bytes, made on first start); unset: `authorize.key` beside the cache key. Several hosts share it."),
    s("LOANHOST_INTERNAL_ISSUER", "identity", None, "The second, internal bearer scheme's issuer (with `LOANHOST_INTERNAL_JWKS_URL`; unset: off)."),
    s("LOANHOST_INTERNAL_JWKS_URL", "identity", None, "The internal scheme's key set."),
    s("LOANHOST_DEV_IDP", "identity", Some("false"), "Serve the embedded dev identity provider (any demo user signs in): refused on a non-loopback `LOANHOST_LISTEN`, and on an `https://` base URL unless `LOANHOST_DEV_IDP_PASSWORD` is set."),
    s("LOANHOST_DEV_IDP_PASSWORD", "identity", None, "A password (at least 12 characters) the dev IdP's sign-in page asks for before it signs anyone in; required to put the dev IdP behind a public `https://` base URL (a tunnel). Sign-in by `login_hint` alone is then refused."),
    s("LOANHOST_DEV_IDP_TOKEN_TTL", "identity", Some("3600"), "Lifetime of the dev IdP's access tokens, in seconds (1..=86400)."),
    s("LOANHOST_DATABASE_URL", "data", Some("sqlite://data/loanhost.db"), "The database: a `sqlite:` file, or a `postgres://` URL (several hosts share one PostgreSQL)."),
    s("LOANHOST_TODAY", "data", None, "A fixed `YYYY-MM-DD` for \"today\" (tests, demos); unset: the UTC date."),
    s("LOANHOST_HEAVY_QUERIES", "data", Some("auto"), "Organisation-wide statements run at once (`auto`: half the cores, at least one; 1..=64); more queue within their call's deadline."),
    s("LOANHOST_PLUGIN_DIR", "plugins", Some("plugins/dist"), "The plugin directory, watched: additions, replacements and removals are served without a restart."),
    s("LOANHOST_CACHE_DIR", "plugins", Some("data/cache"), "Compiled plugins (authenticated with the cache key) and the dev IdP's key."),
    s("LOANHOST_CACHE_MAX_MIB", "plugins", Some("2048"), "Disk the compiled components in LOANHOST_CACHE_DIR may take, in MiB; past it, after a compilation, the ones used least recently are removed (1..=1048576). Compiled functions have a bound of their own (1 GiB)."),
    s("LOANHOST_CACHE_KEY_FILE", "plugins", None, "The key that authenticates compiled plugins; unset: `<cache dir>.key`, beside the directory, never inside it."),
    s("LOANHOST_REQUIRE_SIGNED_PLUGINS", "plugins", Some("false"), "Load only plugins whose component, manifest and view are signed by a trusted key."),
    s("LOANHOST_TRUSTED_KEYS", "plugins", Some(""), "Trusted minisign public keys (base64, comma-separated)."),
    s("LOANHOST_REGISTRY_AUTH_FILE", "plugins", None, "The registry credentials for `plugin push`, `plugin pull` and `plugin check oci://…`: an auth file in the containers/Docker format (`{\"auths\": {\"host:port\": {\"auth\": \"base64(user:password)\"}}}`). Unset: `REGISTRY_AUTH_FILE`, `$XDG_RUNTIME_DIR/containers/auth.json`, then `~/.docker/config.json`; none: anonymous. Credentials never appear in logs or messages."),
    s("LOANHOST_REGISTRY_CA_FILE", "plugins", None, "PEM certificates trusted for registries besides the system's roots (a private registry's CA)."),
    s("LOANHOST_PLUGIN_REFS", "plugins", Some(""), "Registry references the host serves beside its plugin folder (comma-separated `oci://registry/repository/<tool>:tag` or `…@sha256:…`, or `<tool>=oci://…` where the repository is named otherwise): each bound to the one tool it names (an artifact of another tool is refused), resolved at start and every `LOANHOST_REGISTRY_INTERVAL_SECS`, pulled by digest, verified and compiled before it is swapped in; a tool comes from one source only."),
    s("LOANHOST_REGISTRY_TIMEOUT_SECS", "plugins", Some("600"), "The most one followed reference's round may take, in seconds (1..=86400): resolving its tag, pulling and loading its artifact; past it the round is abandoned, counted (`timeout`) and the previous digest keeps serving. Each reference has its own round, so a slow registry delays only its own references."),
    s("LOANHOST_REGISTRY_INTERVAL_SECS", "plugins", Some("30"), "How often followed tags are resolved again, in seconds (1..=86400): a fleet following one tag serves its new digest within this interval and the time to pull and compile it."),
    s("LOANHOST_REGISTRY_ALLOW_UNSIGNED", "plugins", Some("false"), "Serve registry artifacts whose files are not signed by a key of `LOANHOST_TRUSTED_KEYS` (off: refused, the previous digest keeps serving)."),
    s("LOANHOST_REGISTRY_PLAIN_HTTP", "plugins", Some(""), "Registries (`host:port`, comma-separated) spoken over plain HTTP, and loopback token services beside them; each must be on a loopback address, every other registry is reached over https, and a token realm gets credentials only over https or at an origin listed here."),
    s("LOANHOST_PLUGIN_MEMORY_MIB", "plugins", Some("256"), "Linear memory and tables of all plugin calls together, in MiB; one caller holds at most a quarter (1..=65536)."),
    s("LOANHOST_PLUGIN_LOG_LINES_PER_SECOND", "plugins", Some("200"), "Plugin log lines written per second, host-wide; more are dropped and counted (1..=1000000)."),
    s("LOANHOST_COMPILER", "plugins", Some(""), "The `loanhost` binary whose `compile-worker` compiles plugins; empty: this one; `in-process`: on the server's own threads, without the worker's bounds."),
    s("LOANHOST_COMPILE_TIMEOUT_SECS", "plugins", Some("300"), "A plugin's compilation is stopped after this many seconds and the plugin refused (1..=3600)."),
    s("LOANHOST_COMPILE_MEMORY_MIB", "plugins", Some("4096"), "Address space of the compile worker, in MiB; past it the plugin is refused (1..=65536). Under a memory limit (cgroup v2 `memory.max`, as a container or pod has) the worker gets at most what the limit leaves beside what the host uses, less 192 MiB kept for serving; with less than 128 MiB left the plugin is refused without compiling and the host serves on."),
    s("LOANHOST_AUDIT_LOG", "observability", Some("stdout"), "The audit log: `stdout`, `off`, or a file appended to (mode 0600); one JSON line per tool call, numbered and chained to the line before it under `LOANHOST_AUDIT_KEY_FILE` (`loanhost audit verify` names a line removed, changed, inserted or moved). A file's chain continues across restarts and, through `<log>.head` beside it, across rotation; stdout starts a chain per process."),
    s("LOANHOST_AUDIT_ANCHOR_SECS", "observability", Some("10"), "On PostgreSQL, how often a host anchors its audit chain's last line (its number and seal, in `audit_anchors`, outside the log's folder), when lines were written since; `loanhost audit verify --anchors` then names lines cut from the log's end, a log rewound with its head, and a chain written again from an anchored line (1..=3600)."),
    s("LOANHOST_AUDIT_KEY_FILE", "observability", None, "The key that seals the audit log's lines (32 bytes, made once with mode 0600 when missing); unset: `<cache dir>.audit-key`, beside the cache directory. Keep it where those who can edit the log cannot read it: with it, a chain can be sealed again."),
    s("LOANHOST_METRICS_LISTEN", "observability", Some(""), "An address for `GET /metrics` and the detailed `GET /ready` (never the public address); empty: off."),
    s("LOANHOST_OTLP_ENDPOINT", "observability", Some(""), "An OTLP/HTTP traces URL to export spans to; empty: off."),
];

/// `docs/configuration.md`.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Configuration\n\nEvery setting is a `LOANHOST_*` environment variable, or a key of a TOML file given with\n`--config` (the name in lower case without the prefix; the environment wins). An unknown or\nmalformed setting stops the start with a message naming it. What each limit does when it is\nhit, and the test that shows it: `docs/threat-model.md`.\n\nThis page is generated from `host/src/config/reference.rs`, and a test keeps it equal to the\ncode: `UPDATE_DOCS=1 cargo test -p loanhost --lib config::tests` writes it again.\n",
    );
    for (group, title) in GROUPS {
        out.push_str(&format!(
            "\n## {title}\n\n| setting | default | meaning |\n|---|---|---|\n"
        ));
        for setting in SETTINGS.iter().filter(|x| x.group == *group) {
            let default = match setting.default {
                None => "unset".to_string(),
                Some("") => "empty".to_string(),
                Some(d) => format!("`{d}`"),
            };
            out.push_str(&format!(
                "| `{}` | {default} | {} |\n",
                setting.name, setting.meaning
            ));
        }
    }
    out
}
