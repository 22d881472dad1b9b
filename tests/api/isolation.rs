//! Isolation under attack, one test per defence: trust (verified emails, ASCII-only folding,
//! deactivated agents, repeated `/authorize` parameters, the dev IdP's reach), HTTP limits
//! (token before body, batch cap, slow headers, the concurrency cap), per-caller budgets and
//! per-call plugin budgets.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::helpers::{
    fixture_wasm, manifest, seed_app, spawn_app, spawn_app_with, tool_manifest, tool_wasm,
    AppOptions, TestApp, DEFAULT_ROLES,
};

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Claims of a valid token for `email` from the app's dev IdP.
fn claims_for(app: &TestApp, email: &str) -> Value {
    json!({
        "iss": format!("{}/dev-idp", app.base),
        "aud": "https://loanhost.local/mcp",
        "email": email,
        "iat": now(),
        "exp": now() + 300,
    })
}

async fn status_of(app: &TestApp, token: &str) -> u16 {
    app.client
        .post(format!("{}/mcp", app.base))
        .bearer_auth(token)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn an_unverified_email_is_refused() {
    // Arrange
    let app = spawn_app().await;
    let with = |verified: Value| {
        let mut c = claims_for(&app, "admin@example.com");
        if !verified.is_null() {
            c["email_verified"] = verified;
        }
        app.key.sign(&c).unwrap()
    };

    // Act
    let verified = status_of(&app, &with(json!(true))).await;
    let unverified = status_of(&app, &with(json!(false))).await;
    let unverified_text = status_of(&app, &with(json!("false"))).await;
    let absent = status_of(&app, &with(Value::Null)).await;

    // Assert
    assert_eq!(
        (verified, unverified, unverified_text, absent),
        (200, 401, 401, 200)
    );
}

#[tokio::test]
async fn the_verified_claim_is_the_one_paired_with_the_email_used() {
    // Arrange: the email comes from the namespaced claim (no plain `email`); its own
    // `_verified` claim says false, while a plain `email_verified: true` stands beside it.
    let app = spawn_app().await;
    let ns = "https://loanhost.local";
    let token = |own: Value, plain: Value| {
        let mut c = claims_for(&app, "admin@example.com");
        let email = c.as_object_mut().unwrap().remove("email").unwrap();
        c[format!("{ns}/email")] = email;
        if !own.is_null() {
            c[format!("{ns}/email_verified")] = own;
        }
        if !plain.is_null() {
            c["email_verified"] = plain;
        }
        app.key.sign(&c).unwrap()
    };

    // Act
    let own_false = status_of(&app, &token(json!(false), json!(true))).await;
    let own_true = status_of(&app, &token(json!(true), json!(false))).await;
    let own_absent = status_of(&app, &token(Value::Null, json!(false))).await;

    // Assert: only the namespaced email's own claim counts.
    assert_eq!((own_false, own_true, own_absent), (401, 200, 200));
}

#[tokio::test]
async fn the_email_verified_claim_can_be_required() {
    // Arrange
    let mut options = AppOptions::default();
    options
        .env
        .push(("LOANHOST_REQUIRE_EMAIL_VERIFIED", "true".into()));
    let app = spawn_app_with(options).await;
    let mut verified = claims_for(&app, "admin@example.com");
    verified["email_verified"] = json!(true);

    // Act
    let absent = status_of(
        &app,
        &app.key
            .sign(&claims_for(&app, "admin@example.com"))
            .unwrap(),
    )
    .await;
    let present = status_of(&app, &app.key.sign(&verified).unwrap()).await;

    // Assert
    assert_eq!((absent, present), (401, 200));
}

#[tokio::test]
async fn a_non_ascii_look_alike_email_does_not_resolve() {
    // Arrange: the agent is `kim@example.com`; the IdP vouches for `\u{212A}im@example.com`
    // (KELVIN SIGN, which full Unicode case folding turns into `k`).
    let app = spawn_app().await;
    app.db
        .upsert_agent(&loanhost::data::NewAgent {
            id: "00000000-0000-0000-0000-0000000000e5".into(),
            email: "kim@example.com".into(),
            roles: vec!["Admin".into()],
            ..Default::default()
        })
        .await
        .unwrap();

    // Act
    let real = status_of(&app, &app.token_for("KIM@Example.com")).await;
    let look_alike = status_of(&app, &app.token_for("\u{212A}im@example.com")).await;

    // Assert
    assert_eq!(real, 200, "ASCII case still folds");
    assert_eq!(look_alike, 401, "a look-alike must not sign in as kim");
}

#[tokio::test]
async fn a_deactivated_agent_no_longer_signs_in() {
    // Arrange
    let app = spawn_app().await;
    let token = app.bearer("agent-token");
    let before = status_of(&app, &token).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("agents.jsonl"),
        r#"{"id":"00000000-0000-0000-0000-0000000000b2","email":"Agent@Example.com","roles":["Agent"],"managedAgentIds":[],"active":false}
"#,
    )
    .unwrap();

    // Act
    loanhost::data::import::import_dir(&app.db, dir.path(), |_, _| {})
        .await
        .unwrap();
    let after = status_of(&app, &token).await;

    // Assert
    assert_eq!((before, after), (200, 401));
}

#[tokio::test]
async fn the_last_line_of_an_agent_wins_whole() {
    // Arrange: two lines for one agent; the second takes Admin away.
    let app = spawn_app().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("agents.jsonl"),
        concat!(
            r#"{"id":"00000000-0000-0000-0000-0000000000f6","email":"twice@example.com","roles":["Admin"],"managedAgentIds":[]}"#,
            "\n",
            r#"{"id":"00000000-0000-0000-0000-0000000000f6","email":"twice@example.com","roles":["Agent"],"managedAgentIds":[]}"#,
            "\n"
        ),
    )
    .unwrap();

    // Act
    loanhost::data::import::import_dir(&app.db, dir.path(), |_, _| {})
        .await
        .unwrap();
    let agent = app.db.agent_by_email("twice@example.com").await.unwrap();

    // Assert
    assert_eq!(agent.unwrap().roles, vec!["Agent"]);
}

#[tokio::test]
async fn repeated_authorize_parameters_are_refused() {
    // Arrange
    let app = spawn_app().await;
    let query =
        "response_type=code&client_id=loanhost-demo&code_challenge=abc&code_challenge_method=S256\
                 &redirect_uri=http://127.0.0.1:9/cb&redirect_uri=http://evil.example/cb";

    // Act
    let resp = app
        .client
        .get(format!("{}/authorize?{query}", app.base))
        .send()
        .await
        .unwrap();

    // Assert
    assert_eq!(resp.status(), 400);
    assert!(resp.headers().get("location").is_none());
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"], "invalid_request");
    assert_eq!(
        body["error_description"],
        "parameter \"redirect_uri\" is repeated; each may appear once"
    );
}

#[test]
fn the_dev_idp_refuses_a_public_address_or_https() {
    // Arrange
    let with = |pairs: &[(&str, &str)]| {
        loanhost::config::Config::from_map(
            &pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    };

    // Act
    let public = with(&[
        ("LOANHOST_DEV_IDP", "true"),
        ("LOANHOST_LISTEN", "0.0.0.0:8080"),
    ]);
    let https = with(&[
        ("LOANHOST_DEV_IDP", "true"),
        ("LOANHOST_BASE_URL", "https://loans.example.com"),
    ]);
    let other_idp = with(&[
        ("LOANHOST_DEV_IDP", "true"),
        ("LOANHOST_IDP_ISSUER", "https://idp.example.com/"),
    ]);

    // Assert
    assert_eq!(
        public.unwrap_err().to_string(),
        "LOANHOST_DEV_IDP: the dev IdP signs in any demo user; it runs only on a loopback LOANHOST_LISTEN, not 0.0.0.0:8080"
    );
    assert_eq!(
        https.unwrap_err().to_string(),
        "LOANHOST_DEV_IDP: behind a public LOANHOST_BASE_URL (one whose host is not loopback, http:// or https://) the dev IdP signs in only with a password: set LOANHOST_DEV_IDP_PASSWORD (at least 12 characters), or use a real IdP (docs/clients.md)"
    );
    assert!(
        !other_idp.unwrap().dev_idp,
        "not mounted beside another IdP"
    );
}

#[tokio::test]
async fn the_dev_idp_is_not_mounted_beside_another_idp() {
    // Arrange
    let mut options = AppOptions::default();
    options
        .env
        .push(("LOANHOST_IDP_ISSUER", "https://idp.example.com/".into()));

    // Act
    let app = spawn_app_with(options).await;
    let jwks = app
        .client
        .get(format!("{}/dev-idp/jwks", app.base))
        .send()
        .await
        .unwrap();

    // Assert
    assert_eq!(jwks.status(), 404);
}

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
async fn connect_with_header_timeout_of_one_second() -> (TestApp, tokio::net::TcpStream) {
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
async fn closed_within(s: &mut tokio::net::TcpStream, limit: Duration) -> bool {
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
async fn start_body(app: &TestApp, path: &str, headers: &str, len: usize) -> tokio::net::TcpStream {
    let addr = app.base.trim_start_matches("http://").to_string();
    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head =
        format!("POST {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}Content-Length: {len}\r\n\r\n{{");
    s.write_all(head.as_bytes()).await.unwrap();
    s
}

/// Sends a byte every 200 ms until the server answers; returns its status line and when.
async fn trickle_until_answered(mut s: tokio::net::TcpStream) -> (String, Duration) {
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

#[tokio::test]
async fn a_batch_longer_than_the_cap_is_refused() {
    // Arrange
    let app = spawn_app().await;
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_loan_reporting_metadata", "arguments": {}}});
    let batch = |n: usize| Value::Array(vec![call.clone(); n]);

    // Act
    let at_cap = app.post_mcp(Some("agent-token"), &batch(16)).await;
    let over = app.post_mcp(Some("agent-token"), &batch(17)).await;

    // Assert
    assert_eq!(at_cap.status(), 200);
    assert_eq!(
        at_cap
            .json::<Value>()
            .await
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        16
    );
    assert_eq!(over.status(), 400);
    let body: Value = over.json().await.unwrap();
    assert_eq!(
        body["error"]["message"],
        "a batch may hold at most 16 messages; this one has 17"
    );
}

async fn spin_app(env: Vec<(&'static str, String)>, unset: Vec<&'static str>) -> TestApp {
    let mut options = AppOptions::default()
        .plugin(
            "misbehave",
            fixture_wasm("misbehave"),
            manifest("misbehave", DEFAULT_ROLES, &["loans"], 16, 1500, 65536),
        )
        .plugin(
            "get_loan_reporting_metadata",
            tool_wasm("get_loan_reporting_metadata"),
            tool_manifest("get_loan_reporting_metadata"),
        );
    options.env = env;
    options.unset = unset;
    spawn_app_with(options).await
}

#[tokio::test]
async fn a_callers_concurrent_calls_are_capped_and_others_are_not_affected() {
    // Arrange: one call in flight is this caller's budget.
    let app = std::sync::Arc::new(
        spin_app(vec![("LOANHOST_CALLER_MAX_CONCURRENT", "1".into())], vec![]).await,
    );
    let spinning = {
        let app = app.clone();
        tokio::spawn(async move {
            app.call_tool("agent-token", "misbehave", json!({"action": "loop"}))
                .await
        })
    };
    app.eventually("the spinning call is in flight", || async {
        app.plugins.free_slots() < loanhost::plugins::MAX_INSTANCES as usize
    })
    .await;

    // Act
    let second = app
        .post_mcp(
            Some("agent-token"),
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "get_loan_reporting_metadata", "arguments": {}}}),
        )
        .await;
    let other_caller = app
        .call_ok("admin-token", "get_loan_reporting_metadata", json!({}))
        .await;

    // Assert
    assert_eq!(second.status(), 429);
    assert_eq!(second.headers()["retry-after"], "1");
    let body: Value = second.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32050);
    assert_eq!(
        body["error"]["message"],
        "too many tool calls in flight for this caller (at most 1 at once); retry after 1 s"
    );
    assert!(other_caller["statuses"].is_array());
    let spun = spinning.await.unwrap();
    assert_eq!(
        spun["content"][0]["text"],
        "timeout: `misbehave` did not finish within 1500 ms"
    );
}

#[tokio::test]
async fn a_callers_calls_per_minute_run_out() {
    // Arrange
    let app = spin_app(
        vec![("LOANHOST_CALLER_CALLS_PER_MINUTE", "18".into())],
        vec![],
    )
    .await;
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_loan_reporting_metadata", "arguments": {}}});

    // Act
    let mut statuses = Vec::new();
    for _ in 0..4 {
        statuses.push(
            app.post_mcp(Some("agent-token"), &call)
                .await
                .status()
                .as_u16(),
        );
    }
    let other = app.post_mcp(Some("admin-token"), &call).await.status();

    // Assert
    assert_eq!(statuses, vec![200, 200, 200, 429]);
    assert_eq!(other, 200);
}

#[tokio::test]
async fn the_request_concurrency_cap_answers_503_at_once() {
    // Arrange: two requests at a time; two spinning calls hold both.
    let app = std::sync::Arc::new(
        spin_app(
            vec![("LOANHOST_MAX_CONCURRENT_REQUESTS", "2".into())],
            vec![],
        )
        .await,
    );
    let spinners: Vec<_> = (0..2)
        .map(|_| {
            let app = app.clone();
            tokio::spawn(async move {
                app.call_tool("agent-token", "misbehave", json!({"action": "loop"}))
                    .await
            })
        })
        .collect();
    app.eventually("both spinning calls are in flight", || async {
        app.plugins.free_slots() <= loanhost::plugins::MAX_INSTANCES as usize - 2
    })
    .await;

    // Act
    let started = Instant::now();
    let third = app
        .post_mcp(
            Some("admin-token"),
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
        )
        .await;
    let waited = started.elapsed();
    let ready = app
        .client
        .get(format!("{}/ready", app.base))
        .send()
        .await
        .unwrap()
        .status();

    // Assert
    assert_eq!(third.status(), 503);
    assert_eq!(third.headers()["retry-after"], "1");
    assert!(
        waited < Duration::from_secs(1),
        "refused at once, not queued: {waited:?}"
    );
    assert_eq!(ready, 200, "probes are always answered");
    for s in spinners {
        s.await.unwrap();
    }
}

#[tokio::test]
async fn per_call_data_budgets_trap_with_the_limit_named() {
    // Arrange
    let app = spin_app(vec![], vec![]).await;
    seed_app(&app, 7, 300).await;

    // Act: the flood loops queries until the host stops it.
    let flood = app
        .call_err("admin-token", "misbehave", json!({"action": "flood"}))
        .await;
    let label = app
        .call_err(
            "admin-token",
            "misbehave",
            json!({"action": "hugeLabel", "bytes": 1048576}),
        )
        .await;
    let after = app
        .call_ok("admin-token", "misbehave", json!({"action": "query"}))
        .await;

    // Assert
    assert_eq!(
        flood,
        "internal: `misbehave` ran more than its 16 data queries per call (limits.max_queries)"
    );
    assert_eq!(
        label,
        "invalid_params: mapping of `status`: a label of 1048576 bytes is longer than the 64 allowed"
    );
    assert_eq!(after["rows"], 1);
}

#[tokio::test]
async fn filter_input_caps_are_invalid_params_naming_the_limit() {
    // Arrange
    let app = spawn_app_with(AppOptions::default().plugin(
        "report_loans",
        tool_wasm("report_loans"),
        tool_manifest("report_loans"),
    ))
    .await;
    let bomb = "@ ".repeat(30_000);
    let long_text = "@".repeat(5_000);

    // Act
    let words = app
        .call_err(
            "agent-token",
            "report_loans",
            json!({"filter": {"searchText": "a b c d e f g h i"}}),
        )
        .await;
    let long = app
        .call_err(
            "agent-token",
            "report_loans",
            json!({"filter": {"searchText": long_text}}),
        )
        .await;
    let huge = app
        .call_err(
            "agent-token",
            "report_loans",
            json!({"filter": {"searchText": bomb}}),
        )
        .await;
    let many = app
        .call_err(
            "agent-token",
            "report_loans",
            json!({"filter": {"propertyState": "X".repeat(300)}}),
        )
        .await;

    // Assert
    assert_eq!(
        words,
        "invalid_params: filter: `searchText` has 9 words; at most 8 are allowed"
    );
    assert_eq!(
        long,
        "invalid_params: filter: `searchText` has 5000 characters; at most 200 are allowed"
    );
    assert_eq!(
        huge,
        "invalid_params: filter: 60017 bytes is larger than the 16384 allowed"
    );
    assert_eq!(
        many,
        "invalid_params: filter: `propertyState`: a value of 300 bytes is longer than the 256 allowed"
    );
}

#[tokio::test]
async fn rows_bytes_and_log_lines_per_call_are_budgeted() {
    // Arrange: one server allows 100 rows per call, the other 4,000 bytes of results.
    let budgeted = |limit: &str| {
        spawn_app_with(
            AppOptions::default().plugin(
                "misbehave",
                fixture_wasm("misbehave"),
                manifest("misbehave", DEFAULT_ROLES, &["loans"], 16, 5000, 65536)
                    .replace("[limits]\n", &format!("[limits]\n{limit}\n")),
            ),
        )
    };
    let by_rows = budgeted("max_rows = 100").await;
    let by_bytes = budgeted("max_data_bytes = 4000").await;
    seed_app(&by_rows, 5, 300).await;
    seed_app(&by_bytes, 5, 300).await;

    // Act: one row per loan (300 rows of about 60 bytes), then 2,000 and 1,000 log lines.
    let rows = by_rows
        .call_err("admin-token", "misbehave", json!({"action": "flood"}))
        .await;
    let bytes = by_bytes
        .call_err("admin-token", "misbehave", json!({"action": "flood"}))
        .await;
    let logs = by_rows
        .call_err(
            "admin-token",
            "misbehave",
            json!({"action": "logFlood", "bytes": 2000}),
        )
        .await;
    let within = by_rows
        .call_ok(
            "admin-token",
            "misbehave",
            json!({"action": "logFlood", "bytes": 1000}),
        )
        .await;

    // Assert
    assert_eq!(
        rows,
        "internal: `misbehave` exceeded its per-call data budget: the query returned more than the 100 rows left in this call's budget"
    );
    assert_eq!(
        bytes,
        "internal: `misbehave` exceeded its per-call data budget: the query returned more than the 4000 bytes left in this call's budget"
    );
    assert_eq!(
        logs,
        "internal: `misbehave` wrote more than 1000 log lines (only the first 100 are kept)"
    );
    assert_eq!(within["logged"], 1000);
}
