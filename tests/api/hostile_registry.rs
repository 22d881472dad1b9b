//! A registry that answers as an attacker would: digests shaped like paths, manifests without
//! end (declared or not), answers that never come, error bodies that carry log lines, token
//! realms elsewhere. A plain HTTP/1.1 server on a loopback port, one connection a request
//! (`Connection: close`), counting what it sent and who called its realm.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Requests seen: `METHOD path`, and the Authorization header.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// How the registry answers.
#[derive(Clone, Debug)]
pub(crate) enum Mode {
    /// Every manifest is unknown (404).
    NotFound,
    /// A `HEAD` of a manifest names this as its digest.
    Digest(String),
    /// A manifest streams without end; with `declared`, its Content-Length says 1 GiB.
    Endless { declared: bool },
    /// A request is read and never answered.
    Hang,
    /// A manifest's `GET` answers 500 with this body (its `HEAD` a good digest).
    ErrorBody(String),
    /// `/v2/` asks for a bearer token from this realm.
    Realm(String),
    /// Each request answered by the next of these modes in turn.
    Rotate(Vec<Mode>),
}

/// The registry, stopped when dropped.
pub(crate) struct HostileRegistry {
    pub(crate) host: String,
    mode: Arc<Mutex<Mode>>,
    /// Body bytes sent, in all.
    pub(crate) sent: Arc<AtomicU64>,
    /// The most body bytes sent on one connection.
    pub(crate) largest: Arc<AtomicU64>,
    /// Requests being held without an answer now.
    pub(crate) hanging: Arc<AtomicUsize>,
    /// Requests seen, as `METHOD path` and their Authorization header.
    pub(crate) seen: Seen,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for HostileRegistry {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A digest that is one (of nothing the registry has).
pub(crate) fn some_digest() -> String {
    format!("sha256:{}", "ab".repeat(32))
}

impl HostileRegistry {
    /// Starts it on a loopback port in `mode`.
    pub(crate) async fn start(mode: Mode) -> HostileRegistry {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let host = listener.local_addr().unwrap().to_string();
        let mode = Arc::new(Mutex::new(mode));
        let (sent, hanging) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicUsize::new(0)));
        let largest = Arc::new(AtomicU64::new(0));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let task = {
            let counters = Counters {
                sent: sent.clone(),
                largest: largest.clone(),
                hanging: hanging.clone(),
                seen: seen.clone(),
            };
            let mode = mode.clone();
            tokio::spawn(async move {
                for turn in 0usize.. {
                    let Ok((stream, _)) = listener.accept().await else {
                        return;
                    };
                    let mode = match mode.lock().unwrap().clone() {
                        Mode::Rotate(all) if !all.is_empty() => all[turn % all.len()].clone(),
                        other => other,
                    };
                    let counters = counters.clone();
                    tokio::spawn(async move {
                        let _ = answer(stream, mode, counters).await;
                    });
                }
            })
        };
        HostileRegistry {
            host,
            mode,
            sent,
            largest,
            hanging,
            seen,
            task,
        }
    }

    /// Answers from now on as `mode` says.
    pub(crate) fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    /// `oci://<host>/<repository_and_tag>`.
    pub(crate) fn reference(&self, repository_and_tag: &str) -> String {
        format!("oci://{}/{repository_and_tag}", self.host)
    }

    /// Requests seen so far whose line starts with `prefix`.
    pub(crate) fn requests(&self, prefix: &str) -> Vec<(String, Option<String>)> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(line, _)| line.starts_with(prefix))
            .cloned()
            .collect()
    }
}

/// What the connections share.
#[derive(Clone)]
struct Counters {
    sent: Arc<AtomicU64>,
    largest: Arc<AtomicU64>,
    hanging: Arc<AtomicUsize>,
    seen: Seen,
}

async fn answer(
    mut stream: tokio::net::TcpStream,
    mode: Mode,
    counters: Counters,
) -> std::io::Result<()> {
    let Counters {
        sent,
        largest,
        hanging,
        seen,
    } = counters;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 64 * 1024 {
        if stream.read(&mut byte).await? == 0 {
            return Ok(());
        }
        head.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&head).to_string();
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("").to_string();
    let mut parts = first.split_whitespace();
    let (method, path) = (
        parts.next().unwrap_or("").to_string(),
        parts.next().unwrap_or("").to_string(),
    );
    let authorization = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        .map(|(_, v)| v.trim().to_string());
    seen.lock()
        .unwrap()
        .push((format!("{method} {path}"), authorization));
    let reply = |status: &str, headers: &str, body: &str| {
        format!(
            "HTTP/1.1 {status}\r\nConnection: close\r\nContent-Length: {}\r\n{headers}\r\n{body}",
            body.len()
        )
    };
    if path == "/v2/" || path == "/v2" {
        let out = match &mode {
            Mode::Realm(realm) => reply(
                "401 Unauthorized",
                &format!("WWW-Authenticate: Bearer realm=\"{realm}\",service=\"hostile\"\r\n"),
                "",
            ),
            Mode::Hang => return hang(stream, hanging).await,
            _ => reply("200 OK", "", "{}"),
        };
        return stream.write_all(out.as_bytes()).await;
    }
    if !path.contains("/manifests/") {
        return stream
            .write_all(reply("404 Not Found", "", "").as_bytes())
            .await;
    }
    match (&mode, method.as_str()) {
        (Mode::Hang, _) => hang(stream, hanging).await,
        (Mode::NotFound | Mode::Realm(_) | Mode::Rotate(_), _) => {
            stream
                .write_all(reply("404 Not Found", "", "{\"errors\":[]}").as_bytes())
                .await
        }
        (Mode::Digest(digest), _) => {
            let headers = format!("Docker-Content-Digest: {digest}\r\n");
            stream
                .write_all(reply("200 OK", &headers, "").as_bytes())
                .await
        }
        (Mode::Endless { .. } | Mode::ErrorBody(_), "HEAD") => {
            let headers = format!("Docker-Content-Digest: {}\r\n", some_digest());
            stream
                .write_all(reply("200 OK", &headers, "").as_bytes())
                .await
        }
        (Mode::ErrorBody(body), _) => {
            stream
                .write_all(reply("500 Internal Server Error", "", body).as_bytes())
                .await
        }
        (Mode::Endless { declared }, _) => {
            let length = if *declared {
                format!("Content-Length: {}\r\n", 1u64 << 30)
            } else {
                String::new()
            };
            let head = format!(
                "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\n{length}\r\n{{\"schemaVersion\":2,\"pad\":\""
            );
            stream.write_all(head.as_bytes()).await?;
            let chunk = vec![b'a'; 64 * 1024];
            // Without end, as far as the client cares: 1 GiB, or until it hangs up.
            let mut mine = 0u64;
            let mut written = Ok(());
            for _ in 0..(1u64 << 30) / chunk.len() as u64 {
                written = stream.write_all(&chunk).await;
                if written.is_err() {
                    break;
                }
                mine += chunk.len() as u64;
                sent.fetch_add(chunk.len() as u64, Ordering::Relaxed);
            }
            largest.fetch_max(mine, Ordering::Relaxed);
            written
        }
    }
}

/// Holds the request without an answer until the client hangs up.
async fn hang(mut stream: tokio::net::TcpStream, hanging: Arc<AtomicUsize>) -> std::io::Result<()> {
    struct Held(Arc<AtomicUsize>);
    impl Drop for Held {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }
    hanging.fetch_add(1, Ordering::SeqCst);
    let _held = Held(hanging);
    let mut rest = [0u8; 1024];
    while stream.read(&mut rest).await? > 0 {}
    Ok(())
}
