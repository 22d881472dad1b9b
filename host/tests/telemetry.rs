//! OpenTelemetry export from the real binary: with `LOANHOST_OTLP_ENDPOINT` set, the spans of
//! requests reach an OTLP/HTTP receiver (a small one started here on loopback); without it,
//! nothing is sent.

use loanhost_tests as kit;

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::routing::post;

/// Starts a receiver of `POST /v1/traces`; returns its URL and the bodies it got.
async fn receiver() -> (String, Arc<Mutex<Vec<Vec<u8>>>>) {
    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = got.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        post(move |body: Bytes| {
            let sink = sink.clone();
            async move {
                sink.lock().unwrap().push(body.to_vec());
                ""
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/traces", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, got)
}

/// The real binary serving in `dir` (no plugins, SQLite, the audit log off) with `env` added,
/// its standard error in `dir/serve.log`; returns it with its base URL and log path.
async fn start(
    dir: &std::path::Path,
    env: &[(&str, &str)],
) -> (std::process::Child, String, std::path::PathBuf) {
    std::fs::create_dir(dir.join("plugins")).unwrap();
    let port = kit::free_port();
    let base = format!("http://127.0.0.1:{port}");
    let database = format!("sqlite://{}", dir.join("db.sqlite").display());
    let log = dir.join("serve.log");
    let mut command = kit::serve(
        env!("CARGO_BIN_EXE_loanhost"),
        port,
        &base,
        &database,
        &dir.join("plugins"),
        &dir.join("cache"),
    );
    command.env("LOANHOST_AUDIT_LOG", "off");
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
        .spawn()
        .unwrap();
    kit::wait_until_serving(&base, &mut child, &log).await;
    (child, base, log)
}

#[tokio::test]
async fn request_spans_are_exported_over_otlp_when_configured() {
    // Arrange
    let (url, got) = receiver().await;
    let dir = tempfile::tempdir().unwrap();
    // Export within a fifth of a second rather than the default five.
    let (mut child, base, _log) = start(
        dir.path(),
        &[
            ("LOANHOST_OTLP_ENDPOINT", url.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "200"),
        ],
    )
    .await;
    let client = reqwest::Client::new();

    // Act: a request (unauthenticated: its span is exported all the same).
    let status = client
        .post(format!("{base}/mcp"))
        .json(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap()
        .status();
    // Until the request's own span has arrived: the readiness probes' `/health` spans may
    // come in an export of their own, before it.
    let mut exported = Vec::new();
    // Bounded at 2 minutes: the batch exporter sends on its own schedule, slower on a busy
    // machine; the bound is for an exporter that never sends.
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(120) {
        exported = got.lock().unwrap().concat();
        if String::from_utf8_lossy(&exported).contains("/mcp") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = child.kill();
    let _ = child.wait();

    // Assert: an OTLP protobuf export naming the service and the request span.
    assert_eq!(status, 401);
    let text = String::from_utf8_lossy(&exported);
    assert!(
        text.contains("loanhost"),
        "no service name in {} bytes",
        exported.len()
    );
    assert!(
        text.contains("request") && text.contains("/mcp"),
        "no request span: {text:?}"
    );
}

/// A header value no browser would send, with a `"` (header values cannot hold a line break,
/// so Origin shows quoting and escaping instead).
const ODD_ORIGIN: &[u8] = b"http://evil.example\"x";

#[tokio::test]
async fn attacker_text_in_the_log_is_escaped_and_forges_no_line() {
    // Arrange: the real binary, logging at info to a file.
    use base64::Engine as _;
    let dir = tempfile::tempdir().unwrap();
    let (mut child, base, log) = start(dir.path(), &[("RUST_LOG", "info")]).await;
    let b64 = |v: serde_json::Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    let jwt = |header: serde_json::Value, claims: serde_json::Value| {
        format!("{}.{}.c2ln", b64(header), b64(claims))
    };
    let forged_iss = jwt(
        serde_json::json!({"alg": "RS256", "kid": "k"}),
        serde_json::json!({"iss": "https://x\nFORGED-ISS level=ERROR", "aud": "a", "exp": 4_000_000_000u64}),
    );
    let forged_kid = jwt(
        serde_json::json!({"alg": "RS256", "kid": "k\nFORGED-KID"}),
        serde_json::json!({"iss": format!("{base}/dev-idp"), "aud": "https://loanhost.local/mcp", "exp": 4_000_000_000u64}),
    );
    let forged_alg = jwt(
        serde_json::json!({"alg": "RS256\nFORGED-ALG", "kid": "k"}),
        serde_json::json!({"iss": "x"}),
    );
    let client = reqwest::Client::new();
    let list = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});

    // Act
    for token in [&forged_iss, &forged_kid] {
        let r = client
            .post(format!("{base}/mcp"))
            .bearer_auth(token)
            .json(&list)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401);
    }
    let rest = client
        .post(format!("{base}/api/oauth/token"))
        .bearer_auth(&forged_alg)
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap();
    let origin = client
        .post(format!("{base}/mcp"))
        .header(
            "origin",
            reqwest::header::HeaderValue::from_bytes(ODD_ORIGIN).unwrap(),
        )
        .json(&list)
        .send()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let _ = child.kill();
    let _ = child.wait();
    let text = std::fs::read_to_string(&log).unwrap();

    // Assert: no colour codes in a file; each attacker text is in the log, escaped, and never
    // starts a line.
    assert!(
        !text.contains('\u{1b}'),
        "colour codes in a log file:\n{text}"
    );
    assert_eq!(
        (rest.status().as_u16(), origin.status().as_u16()),
        (401, 403)
    );
    for forged in ["FORGED-ISS", "FORGED-KID", "FORGED-ALG"] {
        assert!(
            text.contains(&format!("\\n{forged}")),
            "{forged} not logged escaped:\n{text}"
        );
        assert!(
            !text.lines().any(|l| l.trim_start().starts_with(forged)),
            "{forged} forged a line:\n{text}"
        );
    }
    // The refusal's reason is one quoted field, whatever layer built it.
    for reason in [
        r#"unauthenticated /mcp request reason="invalid token: unknown issuer \"https://x\\nFORGED-ISS"#,
        r#"unauthenticated /mcp request reason="invalid token: no signing key with kid \"k\\nFORGED-KID"#,
        r#"unauthenticated REST request reason="invalid token: malformed header"#,
    ] {
        assert!(text.contains(reason), "not logged as {reason}:\n{text}");
    }
    assert!(
        text.contains(r#"origin="http://evil.example\"x""#),
        "Origin not quoted and escaped:\n{text}"
    );
}

/// The trace and parent span a client names in `params._meta.traceparent`.
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_SPAN: &str = "00f067aa0ba902b7";

#[tokio::test]
async fn mcp_requests_are_spans_named_and_parented_as_the_opentelemetry_mcp_conventions_say() {
    // Arrange: the real binary exporting to a receiver, seeded demo users, a demo agent's token.
    let (url, got) = receiver().await;
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("LOANHOST_OTLP_ENDPOINT", url.as_str()),
        ("OTEL_BSP_SCHEDULE_DELAY", "200"),
    ];
    let (mut child, base, _log) = start(dir.path(), &env).await;
    let database = format!("sqlite://{}", dir.path().join("db.sqlite").display());
    let cli = |args: &[&str]| {
        let template = kit::serve(
            env!("CARGO_BIN_EXE_loanhost"),
            0,
            &base,
            &database,
            &dir.path().join("plugins"),
            &dir.path().join("cache"),
        );
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_loanhost"));
        command.env_clear();
        for (k, v) in template.get_envs() {
            if let Some(v) = v {
                command.env(k, v);
            }
        }
        let out = command.args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    cli(&["seed", "--loans", "10", "--import"]);
    let token = cli(&["token", "--email", "agent@demo.loanhost.local"]);
    let client = reqwest::Client::new();
    let rpc = |id: u64, method: &str, params: serde_json::Value| {
        client
            .post(format!("{base}/mcp"))
            .bearer_auth(&token)
            .header("MCP-Protocol-Version", "2025-11-25")
            .json(&serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .send()
    };

    // Act: a list whose client sent its trace context, and a call of a tool nobody serves.
    let traceparent = format!("00-{TRACE_ID}-{PARENT_SPAN}-01");
    let list = rpc(
        41,
        "tools/list",
        serde_json::json!({"_meta": {"traceparent": traceparent}}),
    )
    .await
    .unwrap();
    let unknown = rpc(
        42,
        "tools/call",
        serde_json::json!({"name": "no_such_tool", "arguments": {}}),
    )
    .await
    .unwrap();
    let mut exported = Vec::new();
    // Bounded at 2 minutes: the batch exporter sends on its own schedule, slower on a busy
    // machine; the bound is for an exporter that never sends.
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(120) {
        exported = got.lock().unwrap().concat();
        let text = String::from_utf8_lossy(&exported);
        if text.contains("tools/list") && text.contains("tools/call") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = child.kill();
    let _ = child.wait();

    // Assert: the spans carry the conventions' names and attributes, the list's span is the
    // child of the client's span (its trace and parent ids as the OTLP bytes hold them), and
    // the failed call names its JSON-RPC error code as error.type.
    assert_eq!(
        (list.status().as_u16(), unknown.status().as_u16()),
        (200, 200)
    );
    let text = String::from_utf8_lossy(&exported);
    for attribute in [
        "mcp.method.name",
        "mcp.protocol.version",
        "2025-11-25",
        "jsonrpc.request.id",
        "network.transport",
        "error.type",
        "rpc.response.status_code",
        "-32602",
        "tools/list",
        "tools/call",
    ] {
        assert!(text.contains(attribute), "no {attribute} in {text:?}");
    }
    let bytes = |hex: &str| -> Vec<u8> {
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect()
    };
    let holds = |needle: &[u8]| exported.windows(needle.len()).any(|w| w == needle);
    assert!(
        holds(&bytes(TRACE_ID)),
        "the client's trace id was not used"
    );
    assert!(
        holds(&bytes(PARENT_SPAN)),
        "the client's span is not the parent"
    );
}
