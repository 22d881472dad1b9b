//! Serving lanes: one per core, each a tokio runtime with a single worker thread, to which the
//! accept loop hands each connection for its whole life. A connection's requests, their
//! memory and the tasks they wake then stay on one core, instead of moving between the
//! workers of one multi-threaded runtime as they are woken and stolen
//! (`docs/decisions/0053-connections-served-in-lanes.md`). A lane is a multi-threaded runtime
//! of one worker, not a current-thread one, so that a blocking write (an audit pipe whose
//! reader is behind) moves the lane's other connections to another thread
//! (`block_in_place`) instead of holding them.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::runtime::Runtime;

/// What a lane runs: called inside the lane's runtime (so that a socket it registers is
/// driven by that runtime's reactor), it returns the connection's future.
pub(super) type Job = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

/// The lanes of one server; dropping it ends them, and any connection still on them.
pub(super) struct Lanes {
    lanes: Vec<Lane>,
}

struct Lane {
    runtime: Runtime,
    /// Connections open on the lane: a new one goes to the lane with fewest.
    open: Arc<AtomicUsize>,
}

impl Lanes {
    /// `count` lanes (at least one), whose threads are named `loanhost-lane-N`.
    pub(super) fn start(count: usize) -> std::io::Result<Lanes> {
        let mut lanes = Vec::with_capacity(count.max(1));
        for n in 0..count.max(1) {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name(format!("loanhost-lane-{n}"))
                .enable_all()
                .build()?;
            lanes.push(Lane {
                runtime,
                open: Arc::new(AtomicUsize::new(0)),
            });
        }
        Ok(Lanes { lanes })
    }

    /// Runs `job` on the lane with the fewest open connections; the lane counts it open until
    /// its future ends.
    pub(super) fn hand(&self, job: Job) {
        let lane = self
            .lanes
            .iter()
            .min_by_key(|l| l.open.load(Ordering::Relaxed))
            .expect("at least one lane");
        lane.runtime
            .spawn(counted(job, Open::new(lane.open.clone())));
    }

    /// The connections open on each lane, in order.
    #[cfg(test)]
    fn open(&self) -> Vec<usize> {
        self.lanes
            .iter()
            .map(|l| l.open.load(Ordering::Relaxed))
            .collect()
    }
}

/// Runs `job` inside the runtime that polls it, `open` held until it ends; dropped unpolled
/// (its lane ended first), it still counts the connection closed.
async fn counted(job: Job, open: Open) {
    let _open = open;
    job().await;
}

/// One connection counted open on a lane, from its hand-over until it ends or is dropped.
struct Open(Arc<AtomicUsize>);

impl Open {
    fn new(count: Arc<AtomicUsize>) -> Open {
        count.fetch_add(1, Ordering::Relaxed);
        Open(count)
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Drop for Lanes {
    fn drop(&mut self) {
        for lane in self.lanes.drain(..) {
            // What is still running (a blocking read of the database) is not waited for.
            lane.runtime.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};
    use std::sync::mpsc as std_mpsc;
    use std::time::Duration;

    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::sync::oneshot;

    use super::*;

    /// A job that stays open until `release` is sent or dropped.
    fn held(release: oneshot::Receiver<()>) -> Job {
        Box::new(move || {
            Box::pin(async move {
                let _ = release.await;
            })
        })
    }

    #[test]
    fn a_connection_is_served_on_a_lane_thread_by_the_lanes_own_reactor() {
        // Arrange: a connected pair of sockets; the server's end as the accept loop hands it.
        let lanes = Lanes::start(2).unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let client = std::thread::spawn(move || {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.write_all(b"ping").unwrap();
            let mut echoed = [0u8; 4];
            s.read_exact(&mut echoed).unwrap();
            echoed
        });
        let (server, _) = listener.accept().unwrap();
        server.set_nonblocking(true).unwrap();
        let (served_on, thread) = std_mpsc::channel();

        // Act: the lane registers the socket with its own runtime and echoes what it reads.
        lanes.hand(Box::new(move || {
            Box::pin(async move {
                let mut s = tokio::net::TcpStream::from_std(server).unwrap();
                let mut got = [0u8; 4];
                s.read_exact(&mut got).await.unwrap();
                s.write_all(&got).await.unwrap();
                let name = std::thread::current().name().map(str::to_owned);
                served_on.send(name).unwrap();
            })
        }));

        // Assert
        assert_eq!(&client.join().unwrap(), b"ping");
        let name = thread.recv().unwrap().unwrap_or_default();
        assert!(name.starts_with("loanhost-lane-"), "served on {name:?}");
    }

    #[test]
    fn a_new_connection_goes_to_the_lane_with_the_fewest_open() {
        // Arrange
        let lanes = Lanes::start(2).unwrap();
        let (keep_a, a) = oneshot::channel();
        let (keep_b, b) = oneshot::channel();
        let (keep_c, c) = oneshot::channel();

        // Act
        lanes.hand(held(a));
        let after_one = lanes.open();
        lanes.hand(held(b));
        let after_two = lanes.open();
        lanes.hand(held(c));
        let after_three = lanes.open();

        // Assert
        assert_eq!(after_one, [1, 0]);
        assert_eq!(after_two, [1, 1], "the second goes to the idle lane");
        assert_eq!(after_three, [2, 1]);
        drop((keep_a, keep_b, keep_c));
    }

    #[test]
    fn a_connection_is_counted_closed_when_its_future_ends_or_is_dropped_unpolled() {
        // Arrange
        let open = Arc::new(AtomicUsize::new(0));
        let (done, finished) = oneshot::channel::<()>();
        let ended = counted(held(finished), Open::new(open.clone()));
        let (_keep, never) = oneshot::channel::<()>();
        let unpolled = counted(held(never), Open::new(open.clone()));
        let both_open = open.load(Ordering::Relaxed);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();

        // Act
        done.send(()).unwrap();
        runtime.block_on(ended);
        drop(unpolled);

        // Assert
        assert_eq!(both_open, 2);
        assert_eq!(open.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_connection_blocked_in_a_write_does_not_hold_the_others_on_its_lane() {
        // Arrange: one lane; a connection on it blocks its thread, as the audit line's write
        // to a pipe whose reader is behind does (`block_in_place`).
        let lanes = Lanes::start(1).unwrap();
        let (unblock, blocked) = std_mpsc::channel::<()>();
        let (report, reports) = std_mpsc::channel::<&str>();
        let first = report.clone();
        lanes.hand(Box::new(move || {
            Box::pin(async move {
                tokio::task::block_in_place(|| blocked.recv().unwrap());
                first.send("the blocked one finished").unwrap();
            })
        }));

        // Act: another connection on the same lane.
        lanes.hand(Box::new(move || {
            Box::pin(async move {
                report.send("the other one ran").unwrap();
            })
        }));

        // Assert: bounds for a hang, not measures of speed.
        let wait = Duration::from_secs(60);
        assert_eq!(reports.recv_timeout(wait), Ok("the other one ran"));
        unblock.send(()).unwrap();
        assert_eq!(reports.recv_timeout(wait), Ok("the blocked one finished"));
    }

    #[test]
    fn dropping_the_lanes_ends_their_threads_with_a_connection_still_open() {
        // Arrange
        let lanes = Lanes::start(2).unwrap();
        let (keep, open) = oneshot::channel();
        lanes.hand(held(open));
        let (ended, when) = std_mpsc::channel();

        // Act
        std::thread::spawn(move || {
            drop(lanes);
            ended.send(()).unwrap();
        });

        // Assert: a bound for a hang, not a measure of speed.
        assert!(when.recv_timeout(Duration::from_secs(60)).is_ok());
        drop(keep);
    }
}
