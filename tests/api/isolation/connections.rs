//! Connections and bodies: the token checked before a body is read, slow headers and idle
//! keep-alives closed at the header timeout, trickled bodies cut at their deadline, slow bodies
//! holding no slot, capped bodies, and a refused token waiting before its next `401`.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::sign_in::status_of;
use crate::helpers::{spawn_app, spawn_app_with, AppOptions, TestApp};

#[tokio::test]
async fn the_token_is_checked_before_the_body_is_read() {
    // Arrange: a client announces 100 MiB and sends only a little of it.
    let app = spawn_app().await;
    let addr = app.base.trim_start_matches("http://").to_string();
    let exchange = |auth: String| {
        let addr = addr.clone();
        async move {
            let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
            let head = format!(
                "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n{auth}Content-Length: 104857600\r\n\r\n{{\"jsonrpc\""
            );
            s.write_all(head.as_bytes()).await.unwrap();
            let mut buf = vec![0u8; 4096];
            // A server that waited for the body would answer at its body timeout, with
            // another status: the status is the signal, the guard only stops a hang.
            let n = tokio::time::timeout(Duration::from_secs(120), s.read(&mut buf))
                .await
                .expect("the server never answered")
                .unwrap();
            String::from_utf8_lossy(&buf[..n]).to_string()
        }
    };

    // Act
    let anonymous = exchange(String::new()).await;
    let authenticated = exchange(format!(
        "Authorization: Bearer {}\r\n",
        app.bearer("agent-token")
    ))
    .await;

    // Assert
    assert!(anonymous.starts_with("HTTP/1.1 401"), "{anonymous}");
    assert!(authenticated.starts_with("HTTP/1.1 413"), "{authenticated}");
}

#[tokio::test]
async fn a_slow_header_connection_is_closed_at_the_timeout() {
    // Arrange
    let (_app, mut s) = connect_with_header_timeout_of_one_second().await;
    let started = Instant::now();

    // Act: a header line, then nothing more.
    s.write_all(b"POST /mcp HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let closed = closed_within(&mut s, Duration::from_secs(10)).await;

    // Assert
    assert!(closed, "the connection stayed open");
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(900) && elapsed < Duration::from_secs(5),
        "closed after {elapsed:?}"
    );
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_at_the_header_timeout() {
    // Arrange
    let (app, mut s) = connect_with_header_timeout_of_one_second().await;
    let host = app.base.trim_start_matches("http://");
    s.write_all(format!("GET /health HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut buf = vec![0u8; 4096];
    let n = s.read(&mut buf).await.unwrap();
    let answered = String::from_utf8_lossy(&buf[..n]).to_string();
    let idle_since = Instant::now();

    // Act: the response read, the connection kept alive and left idle.
    let closed = closed_within(&mut s, Duration::from_secs(10)).await;

    // Assert
    assert!(answered.starts_with("HTTP/1.1 200"), "{answered}");
    assert!(closed, "the idle connection stayed open");
    let idle = idle_since.elapsed();
    assert!(
        idle >= Duration::from_millis(900) && idle < Duration::from_secs(5),
        "closed after {idle:?} idle"
    );
}

/// A server whose request headers must arrive within one second, and a connection to it.
pub(super) async fn connect_with_header_timeout_of_one_second() -> (TestApp, tokio::net::TcpStream)
{
    let mut options = AppOptions::default();
    options
        .env
        .push(("LOANHOST_HEADER_TIMEOUT_SECS", "1".into()));
    let app = spawn_app_with(options).await;
    let addr = app.base.trim_start_matches("http://").to_string();
    let s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    (app, s)
}

/// Whether the server closes `s` within `limit` (whatever it sends before is read and dropped).
pub(super) async fn closed_within(s: &mut tokio::net::TcpStream, limit: Duration) -> bool {
    let mut buf = vec![0u8; 1024];
    tokio::time::timeout(limit, async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}

/// Opens a connection and sends `POST {path}` announcing `len` bytes of body, then the first
/// byte of it; the caller trickles the rest (or not).
pub(super) async fn start_body(
    app: &TestApp,
    path: &str,
    headers: &str,
    len: usize,
) -> tokio::net::TcpStream {
    let addr = app.base.trim_start_matches("http://").to_string();
    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head =
        format!("POST {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}Content-Length: {len}\r\n\r\n{{");
    s.write_all(head.as_bytes()).await.unwrap();
    s
}

/// Sends a byte every 200 ms until the server answers; returns its status line and when.
pub(super) async fn trickle_until_answered(mut s: tokio::net::TcpStream) -> (String, Duration) {
    let started = Instant::now();
    let mut buf = vec![0u8; 1024];
    while started.elapsed() < Duration::from_secs(10) {
        tokio::select! {
            n = s.read(&mut buf) => {
                let n = n.unwrap_or(0);
                let line = String::from_utf8_lossy(&buf[..n]).lines().next().unwrap_or("closed").to_string();
                return (line, started.elapsed());
            }
            _ = tokio::time::sleep(Duration::from_millis(200)) => {
                let _ = s.write_all(b" ").await;
            }
        }
    }
    ("still open after 10 s".into(), started.elapsed())
}

#[tokio::test]
async fn a_trickled_body_is_cut_at_its_total_deadline_on_every_route() {
    // Arrange: a body deadline of 1 s; every byte comes well within any per-chunk timeout.
    let mut options = AppOptions::with_tool("get_loan_reporting_metadata");
    options.env.push(("LOANHOST_BODY_TIMEOUT_SECS", "1".into()));
    let app = spawn_app_with(options).await;
    let bearer = format!(
        "Authorization: Bearer {}\r\nContent-Type: application/json\r\n",
        app.bearer("agent-token")
    );
    let form = "Content-Type: application/x-www-form-urlencoded\r\n".to_string();

    // Act
    let mut answers = Vec::new();
    for (path, headers) in [
        ("/mcp", &bearer),
        ("/token", &form),
        ("/api/oauth/token", &bearer),
    ] {
        let s = start_body(&app, path, headers, 4096).await;
        answers.push((path, trickle_until_answered(s).await));
    }

    // Assert
    for (path, (line, after)) in answers {
        assert!(line.starts_with("HTTP/1.1 408"), "{path}: {line}");
        assert!(
            after >= Duration::from_millis(800) && after < Duration::from_secs(4),
            "{path}: answered after {after:?}"
        );
    }
}

#[tokio::test]
async fn slow_bodies_hold_no_request_slot_and_the_facade_is_capped_per_address() {
    // Arrange: two request slots, two places per address on the unauthenticated endpoints.
    let mut options = AppOptions::with_tool("get_loan_reporting_metadata");
    options
        .env
        .push(("LOANHOST_MAX_CONCURRENT_REQUESTS", "2".into()));
    options
        .env
        .push(("LOANHOST_MAX_REQUESTS_PER_ADDRESS", "2".into()));
    let app = spawn_app_with(options).await;
    let bearer = format!(
        "Authorization: Bearer {}\r\nContent-Type: application/json\r\n",
        app.bearer("admin-token")
    );
    let form = "Content-Type: application/x-www-form-urlencoded\r\n";
    let mut slow = Vec::new();
    for _ in 0..3 {
        slow.push(start_body(&app, "/mcp", &bearer, 4096).await);
    }
    for _ in 0..2 {
        slow.push(start_body(&app, "/token", form, 4096).await);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;

    // Act: five bodies are being sent; a third one to /token, and a whole /mcp call.
    let third = start_body(&app, "/token", form, 4096).await;
    let (third_line, third_after) = trickle_until_answered(third).await;
    let call = app
        .post_mcp(
            Some("agent-token"),
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await;

    // Assert
    assert!(third_line.starts_with("HTTP/1.1 429"), "{third_line}");
    assert!(
        third_after < Duration::from_secs(1),
        "refused at once: {third_after:?}"
    );
    assert_eq!(call.status(), 200, "slow bodies held no request slot");
    drop(slow);
}

#[tokio::test]
async fn the_token_endpoint_caps_its_body() {
    // Arrange
    let app = spawn_app().await;
    let over = "a".repeat(64 * 1024 + 1);

    // Act
    let declared = app
        .client
        .post(format!("{}/token", app.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(over)
        .send()
        .await
        .unwrap();
    // No length announced: 70 chunks of 1 KiB.
    let addr = app.base.trim_start_matches("http://").to_string();
    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let mut request = format!("POST /token HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n").into_bytes();
    for _ in 0..70 {
        request.extend_from_slice(b"400\r\n");
        request.extend_from_slice(&[b'a'; 1024]);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"0\r\n\r\n");
    let _ = s.write_all(&request).await;
    let mut buf = vec![0u8; 1024];
    let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    let undeclared = String::from_utf8_lossy(&buf[..n]).to_string();

    // Assert
    assert_eq!(declared.status(), 413);
    let body: Value = declared.json().await.unwrap();
    assert_eq!(body["error"], "invalid_request");
    assert!(undeclared.starts_with("HTTP/1.1 413"), "{undeclared}");
    assert!(undeclared.contains("\"invalid_request\""), "{undeclared}");
}

#[tokio::test]
async fn a_bad_token_presented_again_waits_before_its_401() {
    // Arrange
    let app = spawn_app().await;
    let forged = format!("{}x", app.bearer("agent-token"));
    let timed = || async {
        let started = Instant::now();
        let status = status_of(&app, &forged).await;
        (status, started.elapsed())
    };

    // Act
    let (first, first_took) = timed().await;
    let (again, again_took) = timed().await;

    // Assert
    assert_eq!((first, again), (401, 401));
    assert!(first_took < Duration::from_millis(400), "{first_took:?}");
    assert!(
        again_took >= Duration::from_millis(450) && again_took < Duration::from_secs(3),
        "{again_took:?}"
    );
}
