//! The Streamable HTTP transport's route, `POST /mcp`: origin check, authentication, the
//! request's body and slot, then the answer `crate::mcp` gives for the body sent with its
//! status and `Retry-After` (the token held that long). The protocol itself (revisions,
//! framing, batches, dispatch) is `crate::mcp`'s, which knows nothing of HTTP handlers.

use std::future::Future as _;
use std::task::Poll;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::mcp_reply::{rpc_error, sent};
use super::reply::{too_many_requests, unauthorized, unavailable};
use super::state::{AppState, MAX_BODY_BYTES};
use crate::auth::{AuthError, Identity, TokenKey};
use crate::mcp::protocol::{failure, RpcError, INVALID_REQUEST, RATE_LIMITED};
use crate::request_body::BodyError;

/// `POST /mcp`. Origin and token are checked from the headers before the body is read, so
/// an unauthenticated client cannot make the server read (or wait for) a body; the request
/// takes its slot once the body is read, so a slow body holds no slot.
pub async fn post(State(state): State<AppState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let headers = &parts.headers;
    if let Some(resp) = check_origin(&state, headers) {
        return resp;
    }
    // (A token in the penalty box was answered by the admission layer already.)
    let key = parts
        .extensions
        .get::<TokenKey>()
        .copied()
        .or_else(|| crate::auth::bearer_token(headers).ok().map(TokenKey::of));
    let penalty_key = key.map(|k| k.0);
    let hold = |secs: u64| {
        if let Some(k) = penalty_key {
            state.penalty.hold(k, secs);
        }
    };
    let identity = match authenticate(&state, headers, key).await {
        Ok(identity) => identity,
        Err(refusal) => return refusal,
    };
    if let Some(ct) = headers.get(header::CONTENT_TYPE) {
        if crate::request_body::media_type(ct) != "application/json" {
            return rpc_error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                RpcError::new(INVALID_REQUEST, "Content-Type must be application/json"),
            );
        }
    }
    let too_large = || {
        rpc_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            RpcError::new(
                INVALID_REQUEST,
                format!("the request body is larger than {MAX_BODY_BYTES} bytes"),
            ),
        )
    };
    // One token sends a few bodies at once at most; each must arrive whole within the body
    // deadline. Only then does the request take a slot of the server's. A body already
    // there when first read (the usual case: it came with the headers) takes no place.
    let mut reading = std::pin::pin!(state.read_body(headers, body, MAX_BODY_BYTES));
    let first = std::future::poll_fn(|cx| Poll::Ready(reading.as_mut().poll(cx))).await;
    let read = match first {
        Poll::Ready(read) => read,
        Poll::Pending => {
            let Some(upload) = key.and_then(|k| state.uploads.try_enter(k.0)) else {
                state.refused("uploads");
                let e = RpcError::retry_later(
                    RATE_LIMITED,
                    format!(
                        "more than {} requests with this token are sending their bodies at once; retry after 1 s",
                        state.uploads.max()
                    ),
                    1,
                );
                return too_many_requests(failure(Value::Null, &e), 1);
            };
            let read = reading.await;
            drop(upload);
            read
        }
    };
    let body = match read {
        Ok(b) => b,
        Err(BodyError::TooLarge(_)) => return too_large(),
        Err(e) => {
            tracing::info!(user_id = %identity.user_id, error = %e, "/mcp request body not read");
            return rpc_error(e.status(), RpcError::new(INVALID_REQUEST, e.to_string()));
        }
    };
    let Some(_slot) = state.work_slot() else {
        return super::reply::busy();
    };
    let values = |name: &str| -> Vec<String> {
        headers
            .get_all(name)
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect()
    };
    let answer = state.dispatcher.post(&identity, &body, values).await;
    if let Some(secs) = answer.retry_after {
        hold(secs);
    }
    sent(answer)
}

/// The caller of a request, or the reply refusing it: `503` while the agent directory is
/// unavailable, `401` with the challenge for a missing or refused token (counted by reason;
/// the token, presented again, waits in the admission layer before its next `401`).
async fn authenticate(
    state: &AppState,
    headers: &HeaderMap,
    key: Option<TokenKey>,
) -> Result<Identity, Response> {
    match state.authenticator.authenticate(headers, key).await {
        Ok(id) => Ok(id),
        Err(AuthError::Unavailable(reason)) => {
            tracing::error!(reason = ?reason, "the agent directory is unavailable");
            Err(unavailable(
                5,
                "the platform database is unavailable; the request was not run (retry shortly)",
            ))
        }
        Err(e) => {
            tracing::info!(reason = ?e.to_string(), "unauthenticated /mcp request");
            crate::telemetry::Metrics::count(&state.metrics.token_failures, failure_reason(&e));
            // Presented again, this token waits in the admission layer before its 401.
            if let Some(k) = key {
                state.penalty.mark_refused(k.0);
            }
            Err(unauthorized(&state.config.base_url))
        }
    }
}

/// The reason label of a refused credential (a small fixed set, never token text).
fn failure_reason(e: &AuthError) -> &'static str {
    match e {
        AuthError::Missing => "missing",
        AuthError::Malformed => "malformed",
        AuthError::UnknownAgent => "unknown_agent",
        AuthError::Unavailable(_) => "unavailable",
        AuthError::InvalidToken(m) => {
            let m = m.to_ascii_lowercase();
            if m.contains("expired") {
                "expired"
            } else if m.contains("signature") {
                "bad_signature"
            } else if m.contains("audience") {
                "audience"
            } else if m.contains("issuer") {
                "issuer"
            } else if m.contains("key") || m.contains("kid") {
                "unknown_key"
            } else if m.contains("email") {
                "email"
            } else {
                "invalid"
            }
        }
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
    tracing::warn!(origin = ?origin, "refused /mcp request from a foreign origin");
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

#[cfg(test)]
mod tests {
    #[test]
    fn origin_of_url() {
        assert_eq!(super::origin_of("http://a:1/x/y"), "http://a:1");
        assert_eq!(super::origin_of("https://a.b"), "https://a.b");
    }
}
