//! Routes and the layers every request passes: body limit and tracing.

use axum::extract::{DefaultBodyLimit, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use tower_http::trace::TraceLayer;

use super::{AppState, MAX_BODY_BYTES};
use crate::auth::facade;
use crate::mcp::transport;

/// The application's router.
pub fn router(state: AppState) -> Router {
    let rest_token = format!("{}/oauth/token", state.config.api_prefix);
    let mut app = Router::new()
        .route("/health", get(health))
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
        .route("/token", post(facade::token))
        .route(&rest_token, post(facade::rest_token))
        .route(
            "/mcp",
            post(transport::post)
                .get(transport::not_allowed)
                .delete(transport::not_allowed),
        )
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(TraceLayer::new_for_http())
        .with_state(state.clone());
    if let Some(idp) = &state.dev_idp {
        app = app.nest("/dev-idp", crate::devidp::router(idp.clone()));
    }
    app
}

/// `GET /health`: liveness (unauthenticated; tells a down server from bad credentials).
async fn health(State(state): State<AppState>) -> Json<Value> {
    Json(json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "tools": state.plugins.registry().snapshot().len(),
    }))
}
