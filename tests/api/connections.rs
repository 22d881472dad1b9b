//! Kept-alive connections stay usable: a request answered before its body was read (a `401`
//! before the body, a body over its cap) is answered with `Connection: close`, so no client
//! sends its next request on a connection the server is about to close; a request whose body
//! was read keeps its connection.

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::helpers::{spawn_app, TestApp};

/// Sends `head` (a request's line and headers) on a new connection, reads the answer's head,
/// then sends `body`; returns the answer's head (lower-cased) and the connection.
async fn early(app: &TestApp, head: &str, body: &[u8]) -> (String, tokio::net::TcpStream) {
    let mut s = tokio::net::TcpStream::connect(app.base.trim_start_matches("http://"))
        .await
        .unwrap();
    s.write_all(head.as_bytes()).await.unwrap();
    let answer = read_head(&mut s).await;
    let _ = s.write_all(body).await;
    (answer, s)
}

/// The head of one response (up to its blank line) and its body by `Content-Length`.
async fn read_head(s: &mut tokio::net::TcpStream) -> String {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte).await.unwrap_or(0) == 0 {
            break;
        }
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    let _ = s.read_exact(&mut body).await;
    head
}

#[tokio::test]
async fn an_answer_sent_before_the_body_says_connection_close_and_one_after_keeps_it() {
    // Arrange
    let app = spawn_app().await;
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let host = app.base.trim_start_matches("http://").to_string();
    let request = |path: &str, auth: &str, length: usize| {
        format!(
            "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n{auth}Content-Length: {length}\r\n\r\n"
        )
    };

    // Act: early answers on every route that gives one.
    let (mcp, _) = early(
        &app,
        &request("/mcp", "Authorization: Bearer not-a-token\r\n", body.len()),
        body,
    )
    .await;
    let (rest, _) = early(
        &app,
        &request(
            "/api/oauth/token",
            "Authorization: Bearer not-a-token\r\n",
            body.len(),
        ),
        body,
    )
    .await;
    let (token, _) = early(&app, &request("/token", "", 100_000), b"").await;
    // A request whose body is read, then a second one on the same connection.
    let valid = format!("Authorization: Bearer {}\r\n", app.bearer("agent-token"));
    let mut s = tokio::net::TcpStream::connect(&host).await.unwrap();
    s.write_all(request("/mcp", &valid, body.len()).as_bytes())
        .await
        .unwrap();
    s.write_all(body).await.unwrap();
    let answered = read_head(&mut s).await;
    s.write_all(request("/mcp", &valid, body.len()).as_bytes())
        .await
        .unwrap();
    s.write_all(body).await.unwrap();
    let again = read_head(&mut s).await;

    // Assert
    for (route, head) in [("/mcp", &mcp), ("REST token", &rest), ("/token", &token)] {
        assert!(
            head.contains("connection: close"),
            "{route} answered before its body without closing: {head}"
        );
    }
    assert!(mcp.starts_with("http/1.1 401"), "{mcp}");
    assert!(token.starts_with("http/1.1 413"), "{token}");
    assert!(
        answered.starts_with("http/1.1 200") && !answered.contains("connection: close"),
        "{answered}"
    );
    assert!(
        again.starts_with("http/1.1 200"),
        "the kept connection carried a second request: {again}"
    );
}
