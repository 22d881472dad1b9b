//! Request bodies, for every route (`http` and `oauth`): one total deadline on reading a body
//! (a trickling client cannot stretch it by sending a byte now and then, as it can a per-chunk
//! timeout), the size cap, the answers when either is hit, and a body's media type.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode};
use http_body::{Frame, SizeHint};
use tokio::time::{Instant, Sleep};

/// A `Content-Type`'s media type, lower case, without its parameters.
pub fn media_type(ct: &HeaderValue) -> String {
    ct.to_str()
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// The body's deadline passed before it arrived whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the request body did not arrive within {0:?}")]
pub struct BodyTimedOut(pub Duration);

/// A request body that fails with [`BodyTimedOut`] once `deadline` passes, however the bytes
/// trickle in. The timer is only made when the body is not already there.
pub struct DeadlineBody {
    inner: Body,
    deadline: Instant,
    limit: Duration,
    sleep: Option<Pin<Box<Sleep>>>,
    ended: Option<Arc<AtomicBool>>,
}

impl DeadlineBody {
    /// `inner`, to be read whole within `limit` from now.
    pub fn wrap(inner: Body, limit: Duration) -> Body {
        Self::tracked(inner, limit, None)
    }

    /// As [`DeadlineBody::wrap`], setting `ended` once the body has been read to its end (so
    /// the server knows whether the connection can carry another request after its answer).
    pub fn tracked(inner: Body, limit: Duration, ended: Option<Arc<AtomicBool>>) -> Body {
        if let Some(e) = &ended {
            if http_body::Body::is_end_stream(&inner) {
                e.store(true, Ordering::Release);
            }
        }
        Body::new(DeadlineBody {
            inner,
            deadline: Instant::now() + limit,
            limit,
            sleep: None,
            ended,
        })
    }
}

impl http_body::Body for DeadlineBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) if Instant::now() < this.deadline => {
                if frame.is_none() || this.inner.is_end_stream() {
                    if let Some(e) = &this.ended {
                        e.store(true, Ordering::Release);
                    }
                }
                Poll::Ready(frame.map(|f| f.map_err(Into::into)))
            }
            Poll::Ready(_) => Poll::Ready(Some(Err(BodyTimedOut(this.limit).into()))),
            Poll::Pending => {
                let deadline = this.deadline;
                let sleep = this
                    .sleep
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
                match sleep.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Some(Err(BodyTimedOut(this.limit).into()))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Why a body was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    /// Larger than the route takes.
    #[error("the request body is larger than {0} bytes")]
    TooLarge(usize),
    /// Not whole by its deadline.
    #[error("the request body did not arrive in time")]
    TimedOut,
    /// The connection broke while it was read.
    #[error("the request body could not be read")]
    Broken,
}

impl BodyError {
    /// The HTTP status that answers it.
    pub fn status(&self) -> StatusCode {
        match self {
            BodyError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            BodyError::TimedOut => StatusCode::REQUEST_TIMEOUT,
            BodyError::Broken => StatusCode::BAD_REQUEST,
        }
    }
}

/// Reads a request's whole body of at most `limit` bytes; a declared `Content-Length` over it
/// is refused before anything is read.
pub async fn read_request(
    headers: &axum::http::HeaderMap,
    body: Body,
    limit: usize,
) -> Result<Bytes, BodyError> {
    if declared_too_large(headers, limit) {
        return Err(BodyError::TooLarge(limit));
    }
    read(body, limit).await
}

/// As [`read_request`], counting a body cut at its deadline in `metrics`
/// (`loanhost_http_refusals_total{kind="body_timeout"}`): how every route reads its body.
pub async fn read_counted(
    headers: &axum::http::HeaderMap,
    body: Body,
    limit: usize,
    metrics: &crate::telemetry::Metrics,
) -> Result<Bytes, BodyError> {
    let read = read_request(headers, body, limit).await;
    if matches!(read, Err(BodyError::TimedOut)) {
        metrics.refused("body_timeout");
    }
    read
}

/// Reads a whole body of at most `limit` bytes.
pub async fn read(body: Body, limit: usize) -> Result<Bytes, BodyError> {
    axum::body::to_bytes(body, limit).await.map_err(|e| {
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&e);
        while let Some(err) = source {
            if err.is::<BodyTimedOut>() {
                return BodyError::TimedOut;
            }
            if err.is::<http_body_util::LengthLimitError>() {
                return BodyError::TooLarge(limit);
            }
            source = err.source();
        }
        BodyError::Broken
    })
}

/// Whether the request's `Content-Length` announces more than `limit` bytes.
fn declared_too_large(headers: &axum::http::HeaderMap, limit: usize) -> bool {
    headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .is_some_and(|n| n > limit as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body that sends one byte every `every`, `n` times.
    fn trickle(n: usize, every: Duration) -> Body {
        let stream = futures_util::stream::unfold(0, move |i| async move {
            if i == n {
                return None;
            }
            tokio::time::sleep(every).await;
            Some((Ok::<_, std::io::Error>(Bytes::from_static(b"x")), i + 1))
        });
        Body::from_stream(stream)
    }

    #[tokio::test(start_paused = true)]
    async fn a_trickled_body_times_out_at_its_total_deadline() {
        // Each byte comes well within a per-chunk timeout; the whole does not.
        let body = DeadlineBody::wrap(
            trickle(100, Duration::from_millis(200)),
            Duration::from_secs(3),
        );
        let started = Instant::now();
        assert_eq!(read(body, 1024).await, Err(BodyError::TimedOut));
        assert_eq!(started.elapsed(), Duration::from_secs(3));
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_in_time_is_read_and_a_large_one_refused() {
        let body = DeadlineBody::wrap(
            trickle(5, Duration::from_millis(100)),
            Duration::from_secs(3),
        );
        assert_eq!(
            read(body, 1024).await.unwrap(),
            Bytes::from_static(b"xxxxx")
        );
        let body = DeadlineBody::wrap(trickle(5, Duration::from_millis(1)), Duration::from_secs(3));
        assert_eq!(read(body, 4).await, Err(BodyError::TooLarge(4)));
        let ready = DeadlineBody::wrap(Body::from("{}"), Duration::from_secs(3));
        assert_eq!(read(ready, 4).await.unwrap(), Bytes::from_static(b"{}"));
    }
}
