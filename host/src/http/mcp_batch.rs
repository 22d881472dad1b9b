//! The handshake-era revisions' requests run for one POST: each message through the
//! dispatcher with its OpenTelemetry operation, one at a time or as a 2025-03-26 batch whose
//! reply is built and capped as it grows.

use std::io::Write as _;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tracing::Instrument as _;

use super::mcp_reply::{json_chunks, rpc_error};
use super::state::AppState;
use crate::auth::Identity;
use crate::mcp::body::Chunks;
use crate::mcp::observe::Operation;
use crate::mcp::protocol::{
    classify, failure, retry_after_of, Incoming, Outgoing, RpcError, BATCH_VERSION,
    INVALID_REQUEST, RATE_LIMITED,
};
use crate::mcp::Revision;

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

/// A batch of `version` (only 2025-03-26 has them): at most `max_batch` messages, run in
/// order; entries past the reply's cap are answered `-32050` without running; the token is
/// held for the longest `Retry-After` among its refusals; `202` when nothing is answered.
pub(super) async fn batch(
    state: &AppState,
    identity: &Identity,
    batch: Vec<Value>,
    version: &str,
    hold: &(dyn Fn(u64) + Sync),
) -> Response {
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
            handle_one(state, identity, m, version).await
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

/// Runs one handshake-era message: a request answered, a notification or a response not.
pub(super) async fn handle_one(
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
                .request(identity, &id, Revision::Handshake, &method, params)
                .instrument(operation.span().clone())
                .await;
            operation.finish(&outcome, &state.metrics);
            Some(match outcome {
                Ok(result) => Outgoing::Result { id, result },
                Err(e) => Outgoing::Error(failure(id, &e)),
            })
        }
    }
}

/// The OpenTelemetry MCP span and duration of one request ([`Operation`]); a `tools/call`
/// names its tool when the server serves one of that name.
pub(super) fn operation(
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
