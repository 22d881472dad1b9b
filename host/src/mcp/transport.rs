//! The Streamable HTTP transport at `/mcp`: origin check, authentication, protocol-version
//! header, JSON-RPC parsing, batches where the version allows them, and `202` for
//! notifications and responses.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::protocol::{
    classify, failure, success, Incoming, RpcError, BATCH_VERSION, DEFAULT_VERSION,
    INVALID_REQUEST, PARSE_ERROR, SUPPORTED_VERSIONS,
};
use crate::auth::Identity;
use crate::http::{unauthorized, AppState};

/// The protocol-version header.
pub const PROTOCOL_HEADER: &str = "mcp-protocol-version";

/// `POST /mcp`.
pub async fn post(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(resp) = check_origin(&state, &headers) {
        return resp;
    }
    let identity = match state.authenticator.authenticate(&headers).await {
        Ok(id) => id,
        Err(e) => {
            tracing::info!(reason = %e, "unauthenticated /mcp request");
            return unauthorized(&state.config.base_url);
        }
    };
    if let Some(ct) = headers.get(header::CONTENT_TYPE) {
        let ct = ct.to_str().unwrap_or("");
        if !ct
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .eq_ignore_ascii_case("application/json")
        {
            return rpc_error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                RpcError::new(INVALID_REQUEST, "Content-Type must be application/json"),
            );
        }
    }
    let version = match headers.get(PROTOCOL_HEADER) {
        None => DEFAULT_VERSION,
        Some(v) => match v
            .to_str()
            .ok()
            .and_then(|v| SUPPORTED_VERSIONS.iter().find(|s| **s == v))
        {
            Some(v) => v,
            None => {
                let got = String::from_utf8_lossy(v.as_bytes()).into_owned();
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    RpcError::new(
                        INVALID_REQUEST,
                        format!(
                            "Unsupported protocol version: {got} (supported: {})",
                            SUPPORTED_VERSIONS.join(", ")
                        ),
                    ),
                );
            }
        },
    };
    let message: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                RpcError::new(PARSE_ERROR, format!("Parse error: {e}")),
            )
        }
    };
    match message {
        Value::Array(batch) => {
            if version != BATCH_VERSION {
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    RpcError::new(
                        INVALID_REQUEST,
                        format!("JSON-RPC batches are not allowed in protocol version {version}"),
                    ),
                );
            }
            if batch.is_empty() {
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    RpcError::new(INVALID_REQUEST, "empty batch"),
                );
            }
            let mut replies = Vec::new();
            for m in batch {
                if let Some(r) = handle_one(&state, &identity, m).await {
                    replies.push(r);
                }
            }
            if replies.is_empty() {
                StatusCode::ACCEPTED.into_response()
            } else {
                json(StatusCode::OK, Value::Array(replies))
            }
        }
        single => match handle_one(&state, &identity, single).await {
            Some(reply) => json(StatusCode::OK, reply),
            None => StatusCode::ACCEPTED.into_response(),
        },
    }
}

/// `GET /mcp` and `DELETE /mcp`: this server opens no SSE stream and keeps no session.
pub async fn not_allowed() -> Response {
    (
        StatusCode::METHOD_NOT_ALLOWED,
        [(header::ALLOW, HeaderValue::from_static("POST"))],
    )
        .into_response()
}

async fn handle_one(state: &AppState, identity: &Identity, message: Value) -> Option<Value> {
    match classify(message) {
        Err((id, e)) => Some(failure(id, &e)),
        Ok(Incoming::Notification { .. } | Incoming::Response) => None,
        Ok(Incoming::Request { id, method, params }) => Some(
            match state.dispatcher.request(identity, &method, params).await {
                Ok(result) => success(id, result),
                Err(e) => failure(id, &e),
            },
        ),
    }
}

/// Refuses a browser `Origin` other than the server's own or a configured one (DNS
/// rebinding protection). Requests without `Origin` (non-browser clients) pass.
fn check_origin(state: &AppState, headers: &HeaderMap) -> Option<Response> {
    let origin = headers.get(header::ORIGIN)?;
    let origin = origin.to_str().unwrap_or("").trim_end_matches('/');
    let own = origin_of(&state.config.base_url);
    if origin == own
        || state
            .config
            .allowed_origins
            .iter()
            .any(|o| o.trim_end_matches('/') == origin)
    {
        return None;
    }
    tracing::warn!(%origin, "refused /mcp request from a foreign origin");
    Some(rpc_error(
        StatusCode::FORBIDDEN,
        RpcError::new(INVALID_REQUEST, format!("Origin {origin} is not allowed")),
    ))
}

/// `scheme://host[:port]` of a URL.
fn origin_of(url: &str) -> &str {
    let after_scheme = url.find("://").map(|i| i + 3).unwrap_or(0);
    match url[after_scheme..].find('/') {
        Some(i) => &url[..after_scheme + i],
        None => url,
    }
}

fn rpc_error(status: StatusCode, e: RpcError) -> Response {
    json(status, failure(Value::Null, &e))
}

fn json(status: StatusCode, body: Value) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.to_string(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    #[test]
    fn origin_of_url() {
        assert_eq!(super::origin_of("http://a:1/x/y"), "http://a:1");
        assert_eq!(super::origin_of("https://a.b"), "https://a.b");
    }
}
