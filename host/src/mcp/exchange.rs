//! One POST's messages, answered: the body parsed as JSON, its revision read once (the
//! `MCP-Protocol-Version` header, else the body's `_meta`), one request or a 2025-03-26
//! batch run through the dispatcher, and the answer typed with the status and `Retry-After`
//! the transport sends. No HTTP framework here: headers come in as a plain lookup, the status
//! goes out as a [`Status`].

use serde_json::Value;

use super::answer::{Answer, Status};
use super::dispatch::{Dispatcher, Revision};
use super::modern::{self, MODERN_VERSION};
use super::protocol::{
    classify, Incoming, Outgoing, RpcError, DEFAULT_VERSION, HEADER_MISMATCH, INVALID_PARAMS,
    INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR, RATE_LIMITED, UNSUPPORTED_PROTOCOL_VERSION,
};
use super::request::Request;
use crate::identity::Identity;

/// The protocol-version header (lower case, as the lookup takes it).
pub const PROTOCOL_HEADER: &str = "mcp-protocol-version";

impl Dispatcher {
    /// Answers one POST's body for `caller`; `header(name)` returns every value of a request
    /// header (lower-case name). The revision is chosen per request: 2026-07-28 when the
    /// `MCP-Protocol-Version` header names anything but a handshake-era version (or, without
    /// it, when the body's `_meta` carries a version), else the header's handshake-era version
    /// or the default.
    pub async fn post(
        &self,
        caller: &Identity,
        body: &[u8],
        header: impl Fn(&str) -> Vec<String>,
    ) -> Answer {
        let message: Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => {
                return Answer::error(
                    Status::BadRequest,
                    Value::Null,
                    RpcError::new(PARSE_ERROR, format!("Parse error: {e}")),
                )
            }
        };
        let version_header = header(PROTOCOL_HEADER).into_iter().next();
        if modern::is_modern(version_header.as_deref(), &message) {
            return self.post_modern(caller, message, header).await;
        }
        // A handshake-era request: its version is one of SUPPORTED_VERSIONS (else it would be
        // answered by the modern rules above), or the default when the header is absent.
        let version = version_header
            .as_deref()
            .map(str::trim)
            .unwrap_or(DEFAULT_VERSION);
        match message {
            Value::Array(messages) => self.batch(caller, messages, version).await,
            single => match self.handshake_message(caller, single, version).await {
                Some(out) => Answer::response(&out),
                None => Answer::accepted(),
            },
        }
    }

    /// One 2026-07-28 request: a single JSON-RPC request whose envelope and headers are
    /// checked before it runs; errors get the revision's statuses (`400`, `404` for an
    /// unknown method), results get `resultType` and the server's identity.
    async fn post_modern(
        &self,
        caller: &Identity,
        message: Value,
        header: impl Fn(&str) -> Vec<String>,
    ) -> Answer {
        let refused = Answer::invalid_request;
        if !message.is_object() {
            return refused(format!(
                "in protocol version {MODERN_VERSION} a POST carries one JSON-RPC request (no batches)"
            ));
        }
        let request = match classify(message) {
            Err((id, e)) => return Answer::error(Status::BadRequest, id, e),
            Ok(Incoming::Notification { .. }) => return Answer::accepted(),
            Ok(Incoming::Response) => {
                return refused(format!(
                    "clients send no JSON-RPC responses in protocol version {MODERN_VERSION}"
                ))
            }
            Ok(Incoming::Request { id, method, params }) => Request::new(id, method, params),
        };
        let checked = modern::validate(request.method.as_str(), request.params.as_ref(), header);
        let id = request.id.clone();
        let reply = self
            .observed(caller, request, Revision::Modern, MODERN_VERSION, checked)
            .await;
        match reply {
            Ok(result) => Answer::one(Status::Ok, &Outgoing::Result { id, result }),
            Err(e) if e.code == RATE_LIMITED => Answer::response(&Outgoing::Error { id, error: e }),
            Err(e) => Answer::error(modern_status(e.code), id, e),
        }
    }
}

/// The status of a 2026-07-28 error response.
fn modern_status(code: i64) -> Status {
    match code {
        PARSE_ERROR
        | INVALID_REQUEST
        | INVALID_PARAMS
        | HEADER_MISMATCH
        | UNSUPPORTED_PROTOCOL_VERSION => Status::BadRequest,
        METHOD_NOT_FOUND => Status::NotFound,
        _ => Status::Ok,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_2026_07_28_error_gets_its_revisions_status() {
        assert_eq!(modern_status(METHOD_NOT_FOUND), Status::NotFound);
        assert_eq!(modern_status(HEADER_MISMATCH), Status::BadRequest);
        assert_eq!(modern_status(INVALID_PARAMS), Status::BadRequest);
        assert_eq!(modern_status(RATE_LIMITED), Status::Ok);
    }
}
