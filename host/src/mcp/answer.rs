//! What a POST's messages come to, as the transport sends it: a status, a body, and the
//! `Retry-After` of a request its caller's budget refused, as fields (no HTTP framework here).

use serde_json::Value;

use super::body::Chunks;
use super::protocol::{Outgoing, RpcError, INVALID_REQUEST, RATE_LIMITED};

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

    /// `400`: the POST is not a request this revision takes (`-32600`, no id).
    pub(super) fn invalid_request(message: String) -> Answer {
        Answer::error(
            Status::BadRequest,
            Value::Null,
            RpcError::new(INVALID_REQUEST, message),
        )
    }

    /// An error response with `id` as `status`.
    pub(super) fn error(status: Status, id: Value, error: RpcError) -> Answer {
        Answer::one(status, &Outgoing::Error { id, error })
    }

    /// One response: `200`, or `429` for a request its caller's budget refused.
    pub(super) fn response(out: &Outgoing) -> Answer {
        match out.error().filter(|e| e.code == RATE_LIMITED) {
            Some(e) => Answer {
                retry_after: Some(e.retry_after.unwrap_or(1)),
                ..Answer::one(Status::TooManyRequests, out)
            },
            None => Answer::one(Status::Ok, out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::protocol::INVALID_PARAMS;

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
    }
}
