//! OAuth: the authorization-server facade (`facade/`: discovery, `/authorize` rewritten to the
//! upstream IdP, `/token` forwarded), its callback for IdPs that send RFC 9207's `iss`
//! (`callback/`) and the key that seals and binds what passes through it (`keys.rs`), the
//! OAuth error shapes both share (`wire.rs`), and the embedded development IdP (`devidp/`).
//! The room has a state of its own ([`OAuth`]) and its own routes ([`router`]), which the HTTP
//! layer composes beside `/mcp`; tokens are issued upstream and validated by `auth`, never here.

pub mod callback;
pub mod devidp;
pub mod facade;
pub mod keys;
mod wire;

use std::sync::Arc;

use axum::body::Bytes;
use axum::routing::{get, post};
use axum::Router;

use crate::config::Config;
use crate::request_body::{self, BodyError};
use crate::telemetry::Metrics;

/// The callback's URL on the server at `base_url`: the redirect URI the IdP is given.
pub use callback::url as callback_url;
pub use callback::CALLBACK_PATH;
pub use keys::CallbackKey;

/// What the OAuth routes share.
pub struct OAuth {
    /// The configuration (the base URL, the upstream IdP, the audience).
    pub config: Arc<Config>,
    /// Outbound HTTP (the `/token` pass-through); never follows redirects.
    pub http: reqwest::Client,
    /// `/token` requests being forwarded to the IdP (`LOANHOST_MAX_TOKEN_FORWARDS`).
    pub token_forwards: tokio::sync::Semaphore,
    /// The key of the facade's authorization-response callback, when it is on.
    pub callback_key: Option<Arc<CallbackKey>>,
    /// The embedded dev IdP, when enabled.
    pub dev_idp: Option<Arc<devidp::DevIdp>>,
    /// Where refusals are counted (`loanhost_http_refusals_total`).
    pub metrics: Arc<Metrics>,
}

impl OAuth {
    /// Counts a request refused by the OAuth routes (`loanhost_http_refusals_total`).
    pub fn refused(&self, reason: &str) {
        self.metrics.refused(reason);
    }

    /// Reads a request's body of at most `limit` bytes within its deadline, a body cut at
    /// its deadline counted ([`request_body::read_counted`]).
    pub async fn read_body(
        &self,
        headers: &axum::http::HeaderMap,
        body: axum::body::Body,
        limit: usize,
    ) -> Result<Bytes, BodyError> {
        request_body::read_counted(headers, body, limit, &self.metrics).await
    }
}

/// The OAuth routes: the discovery documents, `/authorize`, its callback, `/token`, and the
/// dev IdP under `/dev-idp` when it is on.
pub fn router(oauth: Arc<OAuth>) -> Router {
    let mut routes = Router::new()
        .route(
            "/.well-known/oauth-protected-resource",
            get(facade::protected_resource),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(facade::protected_resource),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            get(facade::authorization_server),
        )
        .route("/authorize", get(facade::authorize))
        .route(CALLBACK_PATH, get(callback::authorize_callback))
        .route("/token", post(facade::token))
        .with_state(oauth.clone());
    if let Some(idp) = &oauth.dev_idp {
        routes = routes.nest("/dev-idp", devidp::router(idp.clone()));
    }
    routes
}
