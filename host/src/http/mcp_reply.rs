//! The replies of `POST /mcp` as HTTP responses: a JSON-RPC error with its status, the
//! protocol's typed answer (its status, and `Retry-After` on a `429`), a body of shared pieces
//! written without copying them.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::mcp::body::Chunks;
use crate::mcp::protocol::{failure, RpcError};
use crate::mcp::{Answer, Status};

/// An error with no request id, as `status`.
pub(super) fn rpc_error(status: StatusCode, e: RpcError) -> Response {
    json(status, &failure(Value::Null, &e))
}

/// `body` as JSON, as `status`.
pub(super) fn json(status: StatusCode, body: &impl serde::Serialize) -> Response {
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

/// The answer `crate::mcp` gave, as a response: its status, its body, and `Retry-After`
/// on a `429`.
pub(super) fn sent(answer: Answer) -> Response {
    let status = match answer.status {
        Status::Ok => StatusCode::OK,
        Status::Accepted => return StatusCode::ACCEPTED.into_response(),
        Status::BadRequest => StatusCode::BAD_REQUEST,
        Status::NotFound => StatusCode::NOT_FOUND,
        Status::TooManyRequests => StatusCode::TOO_MANY_REQUESTS,
    };
    let mut response = json_chunks(status, answer.body);
    if status == StatusCode::TOO_MANY_REQUESTS {
        let retry = answer.retry_after.unwrap_or(1);
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(retry));
    }
    response
}

/// A JSON response whose body is `body`'s pieces, shared ones referenced, not copied.
pub(super) fn json_chunks(status: StatusCode, body: Chunks) -> Response {
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
