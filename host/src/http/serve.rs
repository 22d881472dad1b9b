//! The accept loop: a cap on open connections, each accepted one handed to a lane
//! (`super::lanes`, decision 0053) and served there by hyper's HTTP/1 connection builder with
//! a header-read timeout (a slow client cannot hold a connection open by trickling its
//! headers), and graceful shutdown. `axum::serve` offers neither timeout nor cap.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::lanes::Lanes;
use crate::config::ServerLimits;

/// How long in-flight requests may take to finish once shutdown begins.
const DRAIN: Duration = Duration::from_secs(10);

/// Serves `app` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ServerLimits,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections as usize));
    let graceful = GracefulShutdown::new();
    let lanes = Lanes::start(std::thread::available_parallelism().map_or(1, |n| n.get()))?;
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        // At the cap, stop accepting: further clients wait in the kernel's listen queue.
        let slot = tokio::select! {
            s = slots.clone().acquire_owned() => s.expect("the connection semaphore is never closed"),
            _ = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let (stream, peer) = stream;
        let _ = stream.set_nodelay(true);
        let stream = match stream.into_std() {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!(error = %e, "connection could not be handed to a lane");
                continue;
            }
        };
        let app = app.clone();
        let watcher = graceful.watcher();
        let header_timeout = limits.header_timeout;
        lanes.hand(Box::new(move || {
            Box::pin(async move {
                let stream = match tokio::net::TcpStream::from_std(stream) {
                    Ok(s) => s,
                    Err(e) => {
                        tracing::debug!(error = %e, "a lane could not take the connection");
                        return;
                    }
                };
                let mut builder = hyper::server::conn::http1::Builder::new();
                builder
                    .timer(TokioTimer::new())
                    .header_read_timeout(header_timeout)
                    .keep_alive(true);
                // Each request knows its client's address (the per-address cap reads it).
                let service = tower::ServiceExt::map_request(
                    app,
                    move |mut r: hyper::Request<hyper::body::Incoming>| {
                        r.extensions_mut().insert(ConnectInfo(peer));
                        r
                    },
                );
                let conn = builder
                    .serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
                if let Err(e) = watcher.watch(conn).await {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                drop(slot);
            })
        }));
    }
    drop(listener);
    tokio::select! {
        _ = graceful.shutdown() => {}
        _ = tokio::time::sleep(DRAIN) => tracing::warn!("shutdown: connections still open after {DRAIN:?}"),
    }
    Ok(())
}
