//! The Streamable HTTP transport's route, `POST /mcp`: origin check, authentication, the
//! request's body and slot, the revision of each request (2026-07-28 or a handshake-era one),
//! JSON-RPC parsing, batches where the version allows them, and `202` for notifications. The
//! protocol itself (framing, the 2026-07-28 envelope, dispatch) is `crate::mcp`'s, which knows
//! nothing of HTTP handlers.

use std::future::Future as _;
use std::io::Write as _;
use std::task::Poll;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tracing::Instrument as _;

use super::body::BodyError;
use super::reply::{too_many_requests, unauthorized, unavailable};
use super::state::{AppState, MAX_BODY_BYTES};
use crate::auth::{AuthError, Identity, TokenKey};
use crate::mcp::body::Chunks;
use crate::mcp::modern::{self, MODERN_VERSION};
use crate::mcp::observe::Operation;
use crate::mcp::protocol::{
    classify, failure, retry_after_of, Incoming, Outgoing, RpcError, BATCH_VERSION,
    DEFAULT_VERSION, HEADER_MISMATCH, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND,
    PARSE_ERROR, RATE_LIMITED, UNSUPPORTED_PROTOCOL_VERSION,
};

/// The protocol-version header.
pub const PROTOCOL_HEADER: &str = "mcp-protocol-version";

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
    let identity = match state.authenticator.authenticate(headers, key).await {
        Ok(id) => id,
        Err(AuthError::Unavailable(reason)) => {
            tracing::error!(reason = ?reason, "the agent directory is unavailable");
            return unavailable(
                5,
                "the platform database is unavailable; the request was not run (retry shortly)",
            );
        }
        Err(e) => {
            tracing::info!(reason = ?e.to_string(), "unauthenticated /mcp request");
            crate::telemetry::Metrics::count(
                &state.plugins.metrics().token_failures,
                failure_reason(&e),
            );
            // Presented again, this token waits in the admission layer before its 401.
            if let Some(k) = penalty_key {
                state.penalty.mark_refused(k);
            }
            return unauthorized(&state.config.base_url);
        }
    };
    if let Some(ct) = headers.get(header::CONTENT_TYPE) {
        if super::reply::media_type(ct) != "application/json" {
            return rpc_error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                RpcError::new(INVALID_REQUEST, "Content-Type must be application/json"),
            );
        }
    }
    // The revision is chosen per request (from this header, else the body's `_meta`).
    let version_header = headers
        .get(PROTOCOL_HEADER)
        .map(|v| String::from_utf8_lossy(v.as_bytes()));
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
    let message: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                RpcError::new(PARSE_ERROR, format!("Parse error: {e}")),
            )
        }
    };
    if modern::is_modern(version_header.as_deref(), &message) {
        return modern_post(&state, &identity, headers, message, &hold).await;
    }
    // A handshake-era request: its version is one of SUPPORTED_VERSIONS (else it would be
    // answered by the modern rules above), or the default when the header is absent.
    let version = version_header
        .as_deref()
        .map(str::trim)
        .unwrap_or(DEFAULT_VERSION);
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
            let max = state.config.limits.max_batch as usize;
            if batch.len() > max {
                hold(1);
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    RpcError::new(
                        INVALID_REQUEST,
                        format!(
                            "a batch may hold at most {max} messages; this one has {}",
                            batch.len()
                        ),
                    ),
                );
            }
            let mut body = Chunks::default();
            let mut answered = 0usize;
            let mut retry = None;
            for m in batch {
                // A notification gets no reply; a request after the cap is not run.
                let id = m.get("id").cloned().filter(|_| m.get("method").is_some());
                let reply = if body.len() >= MAX_BATCH_REPLY_BYTES {
                    id.map(|id| Outgoing::Error(failure(id, &over_batch_cap())))
                } else {
                    handle_one(&state, &identity, m, version).await
                };
                let Some(mut reply) = reply else { continue };
                let before = body.len();
                let _ = body.write_all(if answered == 0 { b"[" } else { b"," });
                reply.write_to(&mut body);
                if body.len() > MAX_BATCH_REPLY_BYTES + 1 {
                    // Its result does not fit: the entry is answered with the cap instead.
                    let id = match &reply {
                        Outgoing::Result { id, .. } => id.clone(),
                        Outgoing::Error(e) => e["id"].clone(),
                    };
                    body.truncate(before);
                    let _ = body.write_all(if answered == 0 { b"[" } else { b"," });
                    reply = Outgoing::Error(failure(id, &over_batch_cap()));
                    reply.write_to(&mut body);
                }
                answered += 1;
                if reply.is_error_code(RATE_LIMITED) {
                    let r = reply.error().and_then(retry_after_of);
                    retry = retry.max(r);
                }
            }
            if let Some(retry) = retry {
                hold(retry);
            }
            if answered == 0 {
                StatusCode::ACCEPTED.into_response()
            } else {
                let _ = body.write_all(b"]");
                json_chunks(StatusCode::OK, body)
            }
        }
        single => match handle_one(&state, &identity, single, version).await {
            Some(Outgoing::Error(reply)) if reply["error"]["code"] == RATE_LIMITED => {
                throttled(reply, &hold)
            }
            Some(reply) => answer(&reply),
            None => StatusCode::ACCEPTED.into_response(),
        },
    }
}

/// The most bytes a batch's reply may hold: twice the largest tool result (4 MiB). Entries
/// that do not fit are answered `-32050` without running; each entry is also charged to its
/// caller's budgets, which a batch of large replies spends first.
pub const MAX_BATCH_REPLY_BYTES: usize = 8 * 1024 * 1024;

/// The error of a batch entry that does not fit in [`MAX_BATCH_REPLY_BYTES`].
fn over_batch_cap() -> RpcError {
    RpcError::retry_later(
        RATE_LIMITED,
        format!(
            "this batch's reply reached its cap of {MAX_BATCH_REPLY_BYTES} bytes; the request \
             was not answered in it: send it again on its own"
        ),
        1,
    )
}

/// One 2026-07-28 request: a single JSON-RPC request whose envelope and headers are checked
/// before it runs; errors get the revision's HTTP statuses (`400`, `404` for an unknown
/// method), results get `resultType` and the server's identity.
async fn modern_post(
    state: &AppState,
    identity: &Identity,
    headers: &HeaderMap,
    message: Value,
    hold: &(dyn Fn(u64) + Sync),
) -> Response {
    let status_of = |code: i64| match code {
        PARSE_ERROR
        | INVALID_REQUEST
        | INVALID_PARAMS
        | HEADER_MISMATCH
        | UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    };
    if !message.is_object() {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            RpcError::new(
                INVALID_REQUEST,
                format!("in protocol version {MODERN_VERSION} a POST carries one JSON-RPC request (no batches)"),
            ),
        );
    }
    let (id, method, params) = match classify(message) {
        Err((id, e)) => return json(StatusCode::BAD_REQUEST, &failure(id, &e)),
        Ok(Incoming::Notification { .. }) => return StatusCode::ACCEPTED.into_response(),
        Ok(Incoming::Response) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                RpcError::new(
                    INVALID_REQUEST,
                    format!(
                        "clients send no JSON-RPC responses in protocol version {MODERN_VERSION}"
                    ),
                ),
            )
        }
        Ok(Incoming::Request { id, method, params }) => (id, method, params),
    };
    let values = |name: &str| -> Vec<String> {
        headers
            .get_all(name)
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect()
    };
    let checked = modern::validate(&method, params.as_ref(), values);
    let operation = operation(state, &id, &method, params.as_ref(), MODERN_VERSION);
    let reply = match checked {
        Err(e) => Err(e),
        Ok(()) => state
            .dispatcher
            .request_modern(identity, &id, &method, params)
            .instrument(operation.span().clone())
            .await
            .map(|r| modern::decorate(&method, r)),
    };
    operation.finish(&reply, state.plugins.metrics());
    match reply {
        Ok(result) => answer(&Outgoing::Result { id, result }),
        Err(e) if e.code == RATE_LIMITED => throttled(failure(id, &e), hold),
        Err(e) => json(status_of(e.code), &failure(id, &e)),
    }
}

/// A `-32050` reply as `429` with `Retry-After`; the token waits in the penalty box meanwhile.
fn throttled(reply: Value, hold: &(dyn Fn(u64) + Sync)) -> Response {
    let retry = retry_after_of(&reply).unwrap_or(1);
    hold(retry);
    too_many_requests(reply, retry)
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

async fn handle_one(
    state: &AppState,
    identity: &Identity,
    message: Value,
    version: &str,
) -> Option<Outgoing> {
    match classify(message) {
        Err((id, e)) => Some(Outgoing::Error(failure(id, &e))),
        Ok(Incoming::Notification { .. } | Incoming::Response) => None,
        Ok(Incoming::Request { id, method, params }) => {
            let operation = operation(state, &id, &method, params.as_ref(), version);
            let outcome = state
                .dispatcher
                .request(identity, &id, &method, params)
                .instrument(operation.span().clone())
                .await;
            operation.finish(&outcome, state.plugins.metrics());
            Some(match outcome {
                Ok(result) => Outgoing::Result { id, result },
                Err(e) => Outgoing::Error(failure(id, &e)),
            })
        }
    }
}

/// The OpenTelemetry MCP span and duration of one request ([`Operation`]); a `tools/call`
/// names its tool when the server serves one of that name.
fn operation(
    state: &AppState,
    id: &Value,
    method: &str,
    params: Option<&Value>,
    version: &str,
) -> Operation {
    let tool = params
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .filter(|name| method == "tools/call" && state.plugins.registry().get(name).is_some());
    Operation::start(method, id, params, version, tool)
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

fn rpc_error(status: StatusCode, e: RpcError) -> Response {
    json(status, &failure(Value::Null, &e))
}

fn json(status: StatusCode, body: &impl serde::Serialize) -> Response {
    // `to_vec` writes bytes directly; `to_string` goes through `Display` and its formatter.
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        bytes,
    )
        .into_response()
}

/// `200` with one response as its body.
fn answer(out: &Outgoing) -> Response {
    let mut body = Chunks::default();
    out.write_to(&mut body);
    json_chunks(StatusCode::OK, body)
}

/// A JSON response whose body is `body`'s pieces, shared ones referenced, not copied.
fn json_chunks(status: StatusCode, body: Chunks) -> Response {
    let length = body.len();
    let pieces = body.into_pieces();
    let body = if pieces.len() == 1 {
        axum::body::Body::from(pieces.into_iter().next().unwrap_or_default())
    } else {
        let frames = futures_util::stream::iter(
            pieces
                .into_iter()
                .map(|b| Ok::<_, std::convert::Infallible>(http_body::Frame::data(b))),
        );
        axum::body::Body::new(http_body_util::StreamBody::new(frames))
    };
    (
        status,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (header::CONTENT_LENGTH, HeaderValue::from(length)),
        ],
        body,
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
