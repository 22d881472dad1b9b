//! Routes and the layers every request passes: tracing, a whole-request timeout (`408`), a
//! total deadline on every body (`408`), a cap per client address on the unauthenticated
//! endpoints (`429`), a concurrency cap (`503` + `Retry-After`), the body limit; liveness and
//! readiness probes.

use std::time::Duration;

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::extract::{ConnectInfo, DefaultBodyLimit, Request, State};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

use super::mcp_route as transport;
use super::rest;
use super::state::{AppState, MAX_BODY_BYTES};
use crate::auth::TokenKey;
use crate::mcp::{failure, RpcError, RATE_LIMITED};
use crate::request_body::DeadlineBody;

/// The application's router.
pub fn router(state: AppState) -> Router {
    let rest_token = format!("{}/oauth/token", state.config.api_prefix);
    let description = format!(
        "{}{}",
        state.config.api_prefix,
        super::openapi::DESCRIPTION_PATH
    );
    let licenses = format!("{}/users/{{user}}/licenses", state.config.api_prefix);
    let application = format!("{}/loan-applications/{{id}}", state.config.api_prefix);
    let app = Router::new()
        .route("/health", get(health))
        .route(&rest_token, post(rest::token))
        .route(&description, get(rest::description))
        .route(&licenses, get(super::rest_licenses::user_licenses))
        .route(
            &application,
            get(super::rest_applications::loan_application),
        )
        .route(
            "/mcp",
            post(transport::post)
                .get(transport::not_allowed)
                .delete(transport::not_allowed),
        )
        .route("/ready", get(ready))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state.clone())
        .merge(crate::oauth::router(state.oauth.clone()));
    app.layer(middleware::from_fn_with_state(state.clone(), admit))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            state.config.limits.request_timeout,
        ))
        .layer(TraceLayer::new_for_http())
}

/// Admission, before any handler: every body gets one total deadline
/// (`LOANHOST_BODY_TIMEOUT_SECS`), the unauthenticated endpoints a cap per client address,
/// and routes that read no body their request slot (the routes that read one take it once
/// the body is read: `/mcp`, `/token`, `{api_prefix}/oauth/token`). Past the cap of slots,
/// `503` with `Retry-After` at once, rather than a queue that grows until every caller times
/// out. Probes are always answered.
///
/// A token in the penalty box (just refused for its caller's budget) is answered `429` again
/// without any other work, after its remaining wait (at most [`TARPIT`]) and without holding
/// a request slot: a client that ignores `Retry-After` gets one answer per connection per
/// wait, not thousands a second. A token refused as not valid in the last minute waits
/// [`TARPIT`] (without a slot) before it is handled again.
///
/// A request answered before its body was read to the end (a `401` before the body, a
/// refusal, a body cut at its deadline) is answered with `Connection: close`: the rest of its
/// body is still on the connection, so the connection cannot carry another request, and a
/// client that is told so opens a new one instead of sending on a connection being closed.
async fn admit(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    if matches!(path, "/health" | "/ready") {
        return next.run(request).await;
    }
    let has_body = request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim() != "0")
        || request
            .headers()
            .contains_key(axum::http::header::TRANSFER_ENCODING);
    let ended = Arc::new(AtomicBool::new(false));
    let limit = state.config.limits.body_timeout;
    let request = request.map(|b| DeadlineBody::tracked(b, limit, Some(ended.clone())));
    let mut response = admit_read(state, request, next).await;
    if has_body && !ended.load(Ordering::Acquire) {
        response.headers_mut().insert(
            axum::http::header::CONNECTION,
            HeaderValue::from_static("close"),
        );
    }
    response
}

/// [`admit`], once the body is wrapped.
async fn admit_read(state: AppState, mut request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let reads_body_first = path == "/mcp" && request.method() == Method::POST;
    if reads_body_first {
        if let Some(answer) = penalty_box(&state, &mut request).await {
            return answer;
        }
        return next.run(request).await;
    }
    // The unauthenticated endpoints (the OAuth facade, discovery, the REST token route until
    // its token is checked): one client address holds a few places at most.
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip())
        .unwrap_or(IpAddr::V6(Ipv6Addr::UNSPECIFIED));
    let Some(_place) = state.per_address.try_enter(peer) else {
        tracing::warn!(client = %peer, path = ?request.uri().path(), "request refused: too many requests in flight from this address");
        state.refused("per_address");
        return too_many_from_address(state.per_address.max());
    };
    let path = request.uri().path();
    let rest_token = path.strip_prefix(state.config.api_prefix.as_str()) == Some("/oauth/token");
    if request.method() == Method::POST && (path == "/token" || rest_token) {
        return next.run(request).await;
    }
    match state.work_slot() {
        Some(_slot) => next.run(request).await,
        None => super::reply::busy(),
    }
}

/// The penalty box of `/mcp` (see [`admit`]); records the request's [`TokenKey`] for the
/// handler. `Some` is the answer when the token is in the box.
async fn penalty_box(state: &AppState, request: &mut Request) -> Option<Response> {
    let key = crate::auth::bearer_token(request.headers())
        .ok()
        .map(TokenKey::of);
    if let Some(k) = key {
        request.extensions_mut().insert(k);
    }
    let key = key.map(|k| k.0);
    if let Some(left) = key.and_then(|k| state.penalty.remaining(&k)) {
        tokio::time::sleep(Duration::from_secs(left).min(TARPIT)).await;
        let left = key.and_then(|k| state.penalty.remaining(&k)).unwrap_or(1);
        let e = RpcError::retry_later(
            RATE_LIMITED,
            format!("the caller is over a budget; retry after {left} s"),
            left,
        );
        return Some(super::reply::too_many_requests(
            failure(Value::Null, &e),
            left,
        ));
    }
    // A token refused as not valid, presented again (a client looping on it, or a
    // flood), waits before it is answered (its `401`, from the validation cache).
    if key.is_some_and(|k| state.penalty.refused_recently(&k)) {
        tokio::time::sleep(TARPIT).await;
    }
    None
}

/// `429` for a client address over its places on the unauthenticated endpoints, as an OAuth
/// error (these are OAuth endpoints).
fn too_many_from_address(max: u32) -> Response {
    let body = json!({
        "error": "temporarily_unavailable",
        "error_description": format!("more than {max} requests at once from this address; retry shortly"),
    });
    (
        StatusCode::TOO_MANY_REQUESTS,
        [(
            axum::http::header::RETRY_AFTER,
            HeaderValue::from_static("1"),
        )],
        Json(body),
    )
        .into_response()
}

/// Longest a request from a token in the penalty box is held before its `429`.
const TARPIT: Duration = Duration::from_millis(500);

/// `GET /ready`: readiness (unauthenticated): `200` `{"status": "ready"}` when the database
/// answers, the plugin directory can be read and at least one plugin is loaded, `503`
/// `{"status": "not ready"}` otherwise. What is not ready, and the plugins refused, are told
/// on the metrics address (`GET /ready` there) and in the log, not to anyone who asks here.
async fn ready(State(state): State<AppState>) -> Response {
    let (ok, details) = readiness(&state).await;
    if !ok {
        tracing::warn!(readiness = %details, "not ready");
    }
    let status = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(json!({"status": details["status"]}))).into_response()
}

/// Whether the server is ready, and the details: the database, the plugin directory, the
/// tools served and the plugins refused with the reason.
pub(crate) async fn readiness(state: &AppState) -> (bool, Value) {
    let db = state.db.ping(Duration::from_secs(2)).await;
    let tools = state.plugins.registry().snapshot().len();
    let dir = std::fs::read_dir(&state.config.plugin_dir).map(|_| ());
    let ok = db.is_ok() && tools > 0 && dir.is_ok();
    let body = json!({
        "status": if ok { "ready" } else { "not ready" },
        "database": match &db { Ok(()) => "ok".to_string(), Err(e) => { tracing::warn!(error = %e, "readiness: database"); "unreachable".to_string() } },
        "pluginDirectory": match &dir { Ok(()) => "ok".to_string(), Err(e) => format!("unreadable: {e}") },
        "tools": tools,
        "refused": state.plugins.registry().refusals(),
    });
    (ok, body)
}

/// `GET /health`: liveness (unauthenticated; tells a down server from bad credentials).
async fn health(State(state): State<AppState>) -> Json<Value> {
    Json(json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "tools": state.plugins.registry().snapshot().len(),
    }))
}
