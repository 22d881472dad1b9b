//! Routes and the layers every request passes: body limit and tracing.

use axum::extract::{DefaultBodyLimit, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use tower_http::trace::TraceLayer;

use super::{AppState, MAX_BODY_BYTES};
use crate::mcp::transport;

/// The application's router.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/mcp", post(transport::post).get(transport::not_allowed).delete(transport::not_allowed))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

/// `GET /health`: liveness (unauthenticated; tells a down server from bad credentials).
async fn health(State(state): State<AppState>) -> Json<Value> {
    Json(json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "tools": state.plugins.registry().snapshot().len(),
    }))
}
