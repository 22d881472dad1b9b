//! A 2025-03-26 batch: its messages run in order through the dispatcher, its reply built and
//! capped as it grows (entries that do not fit are answered `-32050`), the longest
//! `Retry-After` among its refusals kept for the transport.

use std::io::Write as _;

use serde_json::Value;

use super::answer::{Answer, Status};
use super::body::Chunks;
use super::dispatch::Dispatcher;
use super::protocol::{Outgoing, RpcError, BATCH_VERSION, RATE_LIMITED};
use crate::identity::Identity;

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

impl Dispatcher {
    /// A batch of `version` (only 2025-03-26 has them): at most the dispatcher's batch limit
    /// of messages, run in order; entries past the reply's cap are answered `-32050` without
    /// running; the token is held for the longest `Retry-After` among its refusals; `202`
    /// when nothing is answered.
    pub(super) async fn batch(
        &self,
        caller: &Identity,
        batch: Vec<Value>,
        version: &str,
    ) -> Answer {
        let refused = Answer::invalid_request;
        if version != BATCH_VERSION {
            return refused(format!(
                "JSON-RPC batches are not allowed in protocol version {version}"
            ));
        }
        if batch.is_empty() {
            return refused("empty batch".into());
        }
        let max = self.max_batch();
        if batch.len() > max {
            return Answer {
                retry_after: Some(1),
                ..refused(format!(
                    "a batch may hold at most {max} messages; this one has {}",
                    batch.len()
                ))
            };
        }
        let mut body = Chunks::default();
        let mut answered = 0usize;
        let mut retry = None;
        for m in batch {
            // A notification gets no reply; a request after the cap is not run.
            let id = m.get("id").cloned().filter(|_| m.get("method").is_some());
            let reply = if body.len() >= MAX_BATCH_REPLY_BYTES {
                id.map(|id| Outgoing::Error {
                    id,
                    error: over_batch_cap(),
                })
            } else {
                self.handshake_message(caller, m, version).await
            };
            let Some(mut reply) = reply else { continue };
            let before = body.len();
            let _ = body.write_all(if answered == 0 { b"[" } else { b"," });
            reply.write_to(&mut body);
            if body.len() > MAX_BATCH_REPLY_BYTES + 1 {
                // Its result does not fit: the entry is answered with the cap instead.
                body.truncate(before);
                let _ = body.write_all(if answered == 0 { b"[" } else { b"," });
                reply = Outgoing::Error {
                    id: reply.id().clone(),
                    error: over_batch_cap(),
                };
                reply.write_to(&mut body);
            }
            answered += 1;
            if let Some(e) = reply.error().filter(|e| e.code == RATE_LIMITED) {
                retry = retry.max(e.retry_after);
            }
        }
        if answered == 0 {
            return Answer {
                retry_after: retry,
                ..Answer::accepted()
            };
        }
        let _ = body.write_all(b"]");
        Answer {
            status: Status::Ok,
            body,
            retry_after: retry,
        }
    }
}
