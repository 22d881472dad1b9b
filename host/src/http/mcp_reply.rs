//! The replies of `POST /mcp` as HTTP responses: a JSON-RPC error with its status, one
//! answer, a body of shared pieces written without copying them, and `429` for a request
//! refused for its caller's budget.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::reply::too_many_requests;
use crate::mcp::body::Chunks;
use crate::mcp::protocol::{failure, retry_after_of, Outgoing, RpcError};

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

/// `200` with one response as its body.
pub(super) fn answer(out: &Outgoing) -> Response {
    let mut body = Chunks::default();
    out.write_to(&mut body);
    json_chunks(StatusCode::OK, body)
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

/// A `-32050` reply as `429` with `Retry-After`; the token waits in the penalty box meanwhile.
pub(super) fn throttled(reply: Value, hold: &(dyn Fn(u64) + Sync)) -> Response {
    let retry = retry_after_of(&reply).unwrap_or(1);
    hold(retry);
    too_many_requests(reply, retry)
}
