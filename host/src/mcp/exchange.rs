//! One POST's messages, answered: the body parsed as JSON, its revision read once (the
//! `MCP-Protocol-Version` header, else the body's `_meta`), one request or a 2025-03-26
//! batch run through the dispatcher, and the answer typed with the status and `Retry-After`
//! the transport sends. No HTTP framework here: headers come in as a plain lookup, the status
//! goes out as a [`Status`].

use serde_json::Value;
use tracing::Instrument as _;

use super::body::Chunks;
use super::dispatch::{Dispatcher, Revision};
use super::modern::{self, MODERN_VERSION};
use super::observe::Operation;
use super::protocol::{
    classify, Incoming, Outgoing, Reply, RpcError, DEFAULT_VERSION, HEADER_MISMATCH,
    INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR, RATE_LIMITED,
    UNSUPPORTED_PROTOCOL_VERSION,
};
use super::request::Request;
use crate::identity::Identity;

/// The protocol-version header (lower case, as the lookup takes it).
pub const PROTOCOL_HEADER: &str = "mcp-protocol-version";

/// The status of an answer, as the Streamable HTTP transport sends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// `200`: a response (or a batch's), errors of handshake-era requests included.
    Ok,
    /// `202` with no body: only notifications or responses were sent.
    Accepted,
    /// `400`: a malformed message, or a 2026-07-28 request refused before it ran.
    BadRequest,
    /// `404`: a 2026-07-28 request for a method this server does not have.
    NotFound,
    /// `429`: the caller's budget refused the request (`Retry-After` says when to come back).
    TooManyRequests,
}

/// What a POST's messages come to.
#[derive(Debug)]
pub struct Answer {
    /// The status to send.
    pub status: Status,
    /// The body: one response, a batch's array, or nothing (`202`).
    pub body: Chunks,
    /// After how many seconds the caller may come back, when its budget refused a request:
    /// the transport holds the token that long, and a `429` carries it as `Retry-After`.
    pub retry_after: Option<u64>,
}

impl Answer {
    /// `202`, nothing to answer.
    pub(super) fn accepted() -> Answer {
        Answer {
            status: Status::Accepted,
            body: Chunks::default(),
            retry_after: None,
        }
    }

    /// One response as `status`.
    pub(super) fn one(status: Status, out: &Outgoing) -> Answer {
        let mut body = Chunks::default();
        out.write_to(&mut body);
        Answer {
            status,
            body,
            retry_after: None,
        }
    }

    /// An error response with `id` as `status`.
    pub(super) fn error(status: Status, id: Value, error: RpcError) -> Answer {
        Answer::one(status, &Outgoing::Error { id, error })
    }

    /// One response: `200`, or `429` for a request its caller's budget refused.
    fn response(out: &Outgoing) -> Answer {
        match out.error().filter(|e| e.code == RATE_LIMITED) {
            Some(e) => Answer {
                retry_after: Some(e.retry_after.unwrap_or(1)),
                ..Answer::one(Status::TooManyRequests, out)
            },
            None => Answer::one(Status::Ok, out),
        }
    }
}

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
        let refused = |message: String| {
            Answer::error(
                Status::BadRequest,
                Value::Null,
                RpcError::new(INVALID_REQUEST, message),
            )
        };
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
        let operation = self.operation(&request, MODERN_VERSION);
        let method = request.method.clone();
        let id = request.id.clone();
        let reply = match checked {
            Err(e) => Err(e),
            Ok(()) => self
                .request(caller, request, Revision::Modern)
                .instrument(operation.span().clone())
                .await
                .map(|r| modern::decorate(method.as_str(), r)),
        };
        operation.finish(&reply, self.metrics());
        match reply {
            Ok(result) => Answer::one(Status::Ok, &Outgoing::Result { id, result }),
            Err(e) if e.code == RATE_LIMITED => Answer::response(&Outgoing::Error { id, error: e }),
            Err(e) => Answer::error(modern_status(e.code), id, e),
        }
    }

    /// Runs one handshake-era message: a request answered, a notification or a response not.
    pub(super) async fn handshake_message(
        &self,
        caller: &Identity,
        message: Value,
        version: &str,
    ) -> Option<Outgoing> {
        match classify(message) {
            Err((id, error)) => Some(Outgoing::Error { id, error }),
            Ok(Incoming::Notification { .. } | Incoming::Response) => None,
            Ok(Incoming::Request { id, method, params }) => {
                let request = Request::new(id, method, params);
                let id = request.id.clone();
                Some(match self.observed(caller, request, version).await {
                    Ok(result) => Outgoing::Result { id, result },
                    Err(error) => Outgoing::Error { id, error },
                })
            }
        }
    }

    /// A handshake-era request answered inside its OpenTelemetry operation.
    async fn observed(
        &self,
        caller: &Identity,
        request: Request,
        version: &str,
    ) -> Result<Reply, RpcError> {
        let operation = self.operation(&request, version);
        let outcome = self
            .request(caller, request, Revision::Handshake)
            .instrument(operation.span().clone())
            .await;
        operation.finish(&outcome, self.metrics());
        outcome
    }

    /// The OpenTelemetry MCP span and duration of one request ([`Operation`]); a `tools/call`
    /// names its tool when the server serves one of that name.
    fn operation(&self, request: &Request, version: &str) -> Operation {
        let tool = request.tool_name().filter(|name| self.serves(name));
        Operation::start(
            request.method.as_str(),
            &request.id,
            request.params.as_ref(),
            version,
            tool,
        )
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
    fn a_refusal_carries_its_status_and_retry_after_as_fields() {
        // Arrange
        let refused = Outgoing::Error {
            id: 1.into(),
            error: RpcError::retry_later(RATE_LIMITED, "over budget", 7),
        };
        let failed = Outgoing::Error {
            id: 2.into(),
            error: RpcError::new(INVALID_PARAMS, "bad"),
        };
        // Act
        let (refused, failed) = (Answer::response(&refused), Answer::response(&failed));
        // Assert
        assert_eq!(
            (refused.status, refused.retry_after),
            (Status::TooManyRequests, Some(7))
        );
        assert_eq!((failed.status, failed.retry_after), (Status::Ok, None));
        assert_eq!(modern_status(METHOD_NOT_FOUND), Status::NotFound);
        assert_eq!(modern_status(HEADER_MISMATCH), Status::BadRequest);
        assert_eq!(modern_status(RATE_LIMITED), Status::Ok);
    }
}
