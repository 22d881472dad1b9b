//! Routes and the layers every request passes: tracing, a whole-request timeout (`408`), a
//! concurrency cap (`503` + `Retry-After`), the body limit; liveness and readiness probes.

use std::time::Duration;

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use tower_http::timeout::TimeoutLayer;
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
        .route("/ready", get(ready))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state.clone());
    if let Some(idp) = &state.dev_idp {
        app = app.nest("/dev-idp", crate::devidp::router(idp.clone()));
    }
    app.layer(middleware::from_fn_with_state(state.clone(), admit))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            state.config.limits.request_timeout,
        ))
        .layer(TraceLayer::new_for_http())
}

/// Caps the requests handled at once: past the cap, `503` with `Retry-After` at once, rather
/// than a queue that grows until every caller times out. Probes are always answered.
async fn admit(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if matches!(request.uri().path(), "/health" | "/ready") {
        return next.run(request).await;
    }
    match state.in_flight.clone().try_acquire_owned() {
        Ok(_permit) => next.run(request).await,
        Err(_) => {
            tracing::warn!("request refused: the server is at its concurrency limit");
            super::unavailable(1, "the server is at its concurrency limit; retry shortly")
        }
    }
}

/// `GET /ready`: readiness (unauthenticated). `200` when the database answers and at least
/// one plugin is loaded; `503` naming what is not ready otherwise.
async fn ready(State(state): State<AppState>) -> Response {
    let db = state.db.ping(Duration::from_secs(2)).await;
    let tools = state.plugins.registry().snapshot().len();
    let ok = db.is_ok() && tools > 0;
    let body = json!({
        "status": if ok { "ready" } else { "not ready" },
        "database": match &db { Ok(()) => "ok".to_string(), Err(e) => { tracing::warn!(error = %e, "readiness: database"); "unreachable".to_string() } },
        "tools": tools,
    });
    let status = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(body)).into_response()
}

/// `GET /health`: liveness (unauthenticated; tells a down server from bad credentials).
async fn health(State(state): State<AppState>) -> Json<Value> {
    Json(json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "tools": state.plugins.registry().snapshot().len(),
    }))
}
