//! The HTTP layer's exact replies: `503` busy or unavailable,
//! `429` with `Retry-After`, and the spec's `401` challenge.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// `503`: the server is at its concurrency limit.
pub fn busy() -> Response {
    unavailable(1, "the server is at its concurrency limit; retry shortly")
}

/// `429` with `Retry-After`: the caller is over a budget; `reply` is the JSON-RPC error
/// (`-32050`).
pub fn too_many_requests(reply: serde_json::Value, retry_after_secs: u64) -> Response {
    retry_later(StatusCode::TOO_MANY_REQUESTS, reply, retry_after_secs)
}

/// `503` with `Retry-After` and a JSON-RPC error body (`-32051`): the server (or the database
/// behind it) cannot take the request now; nothing is wrong with the caller's credentials.
pub fn unavailable(retry_after_secs: u64, message: &str) -> Response {
    let e = crate::mcp::RpcError::retry_later(
        crate::mcp::SERVER_UNAVAILABLE,
        message,
        retry_after_secs,
    );
    retry_later(
        StatusCode::SERVICE_UNAVAILABLE,
        crate::mcp::failure(serde_json::Value::Null, &e),
        retry_after_secs,
    )
}

/// A JSON body with `status` and `Retry-After`.
fn retry_later(status: StatusCode, body: serde_json::Value, retry_after_secs: u64) -> Response {
    (
        status,
        [
            (header::RETRY_AFTER, HeaderValue::from(retry_after_secs)),
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
        ],
        body.to_string(),
    )
        .into_response()
}

/// The spec's `401`: empty body and two `WWW-Authenticate` headers, the
/// `resource_metadata` one first, then a bare `Bearer`.
pub fn unauthorized(base_url: &str) -> Response {
    let challenge =
        format!("Bearer resource_metadata=\"{base_url}/.well-known/oauth-protected-resource\"");
    let mut resp = StatusCode::UNAUTHORIZED.into_response();
    let h = resp.headers_mut();
    h.append(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_str(&challenge).unwrap_or_else(|_| HeaderValue::from_static("Bearer")),
    );
    h.append(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    resp
}
