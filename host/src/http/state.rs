//! What every handler shares (`AppState`): configuration, the authenticator, the plugin host,
//! the dispatcher, the database, the OAuth room's state, and the HTTP layer's gates, slots and
//! penalty box.

use std::sync::Arc;

use super::{gate, penalty};
use crate::auth::Authenticator;
use crate::config::Config;
use crate::mcp::Dispatcher;
use crate::plugins::Plugins;
use crate::request_body as body;

/// Largest request body accepted, in bytes.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Shared state of every handler; a clone (one per request and layer that takes it) is one
/// reference count.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl AppState {
    /// The state of a server made of these parts.
    pub fn new(shared: Shared) -> Self {
        AppState(Arc::new(shared))
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// What every handler shares.
pub struct Shared {
    /// The configuration.
    pub config: Arc<Config>,
    /// Who the caller is.
    pub authenticator: Arc<dyn Authenticator>,
    /// The plugin host.
    pub plugins: Arc<Plugins>,
    /// The host's metrics, made by the application and shared with the plugin host, the
    /// dispatcher and the OAuth routes.
    pub metrics: Arc<crate::telemetry::Metrics>,
    /// MCP method dispatch.
    pub dispatcher: Dispatcher,
    /// The database.
    pub db: crate::data::Db,
    /// The OAuth routes' own state (the facade, its callback, the dev IdP).
    pub oauth: Arc<crate::oauth::OAuth>,
    /// Requests being handled (the cap answers `503`); taken once a request's body is read.
    pub in_flight: Arc<tokio::sync::Semaphore>,
    /// Requests in flight per client address on the unauthenticated endpoints.
    pub per_address: Arc<gate::KeyedGate<std::net::IpAddr>>,
    /// Bodies being read per bearer token on `/mcp`.
    pub uploads: Arc<gate::KeyedGate<[u8; 32]>>,
    /// Tokens refused for their caller's budget, until their `Retry-After`.
    pub penalty: Arc<penalty::PenaltyBox>,
}

impl Shared {
    /// A request slot, taken for the work of a request once its body is read (a client that
    /// trickles its body holds a connection, never a slot); `None` past the cap (answer with
    /// `reply::busy`).
    pub fn work_slot(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let slot = self.in_flight.clone().try_acquire_owned().ok();
        if slot.is_none() {
            tracing::warn!("request refused: the server is at its concurrency limit");
            self.refused("busy");
        }
        slot
    }

    /// Reads a request's body of at most `limit` bytes within its deadline, a body cut at
    /// its deadline counted ([`body::read_counted`]).
    pub async fn read_body(
        &self,
        headers: &axum::http::HeaderMap,
        body: axum::body::Body,
        limit: usize,
    ) -> Result<axum::body::Bytes, body::BodyError> {
        body::read_counted(headers, body, limit, &self.metrics).await
    }

    /// Counts a request refused by the HTTP layer's limits (`loanhost_http_refusals_total`).
    pub fn refused(&self, reason: &str) {
        self.metrics.refused(reason);
    }
}
