//! The attacks, one phase each: the table of phases and the run of one against the server while
//! the legitimate callers keep calling.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use loanhost::oauth::devidp::SigningKey;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt as _;

use super::contained::hostile_of;
use super::hostile_registry::Mode;
use super::payloads::{compile_bomb, nested_arguments, trickled_bodies, watch_listing};
use super::server::{call, outcome, traffic_client, Server, HOSTILE_MANIFEST};
use super::{attacker, ADMIN};

/// The attacks: (name, what it does).
pub(super) const ATTACKS: &[(&str, &str)] = &[
    (
        "hostile registry",
        "the registry of 8 followed references answers every way an attacker would (endless and 1 GiB manifests, path-like digests, answers that never come, log lines in error bodies)",
    ),
    (
        "query flood",
        "8 loops of a plugin that runs its heaviest query again and again",
    ),
    (
        "huge labels",
        "8 loops grouping every loan by a mapped label of 1 MiB",
    ),
    (
        "many memories",
        "a component with 120 memories, rewritten every 50 ms",
    ),
    ("spin", "8 loops of a plugin that never returns"),
    ("spin (Python)", "8 loops of a Python plugin that never returns"),
    ("spin (TypeScript)", "8 loops of a TypeScript plugin that never returns"),
    (
        "memory bomb",
        "8 loops growing memory to the 512 MiB manifest limit",
    ),
    (
        "memory bomb (Python)",
        "8 loops of a Python plugin growing memory to the 512 MiB limit",
    ),
    (
        "memory bomb (TypeScript)",
        "8 loops of a TypeScript plugin growing memory to the 512 MiB limit",
    ),
    (
        "output bomb",
        "8 loops returning 4 MiB results (the most a manifest may allow)",
    ),
    (
        "output bomb (Python)",
        "8 loops of a Python plugin returning 4 MiB results",
    ),
    (
        "output bomb (TypeScript)",
        "8 loops of a TypeScript plugin returning 4 MiB results",
    ),
    (
        "log flood",
        "8 loops writing 100,000 log lines of 4 KiB with forged line breaks",
    ),
    (
        "searchText bomb",
        "8 loops of report_loans with 7,000-word searchText",
    ),
    (
        "batch flood",
        "8 loops of 16-call batches, and 1,000-call batches",
    ),
    (
        "slow headers",
        "400 connections trickling a header byte every 500 ms",
    ),
    (
        "oversized bodies",
        "8 loops announcing 100 MiB bodies, with and without a token",
    ),
    (
        "token flood",
        "8 loops of expired, forged and unknown-kid tokens",
    ),
    (
        "slow bodies /token",
        "160 connections trickling a /token body, a byte every 500 ms",
    ),
    (
        "slow bodies REST token",
        "160 connections trickling a /api/oauth/token body (valid token), a byte every 500 ms",
    ),
    (
        "slow bodies /mcp",
        "160 connections trickling a /mcp body (valid token), a byte every 500 ms",
    ),
    (
        "nested arguments",
        "8 loops of 1 MiB arguments nested 120 deep with 8 KiB keys, 4 to an unknown tool and 4 to report_loans",
    ),
    (
        "batched view reads",
        "8 loops of 16-read batches of a 0.7 MiB view",
    ),
    (
        "table hoard",
        "8 loops calling a plugin whose 56 extra instances each hold a 20,000-element table",
    ),
    (
        "compile bomb",
        "a component with one 150,000-instruction function dropped into the plugin folder",
    ),
];

/// Runs one attack until `until`; returns the attacker's outcomes with their counts.
pub(super) async fn attack(server: &Server, name: &str, until: Instant) -> BTreeMap<String, usize> {
    let outcomes: Arc<Mutex<BTreeMap<String, usize>>> = Arc::default();
    let client = traffic_client();
    let token = server.token(&attacker(name), 600);
    let base = server.base.clone();
    let count = {
        let outcomes = outcomes.clone();
        move |o: String| *outcomes.lock().unwrap().entry(o).or_default() += 1
    };
    let mut tasks: Vec<tokio::task::JoinHandle<()>> = Vec::new();
    // `n` closed loops sending `body`, serialized once (the attacker's own CPU is not what
    // this suite measures).
    let loops_n = |n: usize, body: Value, headers: Vec<(&'static str, String)>| {
        let mut v = Vec::new();
        let body = serde_json::to_vec(&body).unwrap();
        for _ in 0..n {
            let (client, base, body, headers, count, token) = (
                client.clone(),
                base.clone(),
                body.clone(),
                headers.clone(),
                count.clone(),
                token.clone(),
            );
            v.push(tokio::spawn(async move {
                while Instant::now() < until {
                    let mut req = client
                        .post(format!("{base}/mcp"))
                        .bearer_auth(&token)
                        .header("content-type", "application/json")
                        .body(body.clone());
                    for (k, val) in &headers {
                        req = req.header(*k, val);
                    }
                    count(outcome(req.send().await).await);
                }
            }));
        }
        v
    };
    let loops = |body: Value, headers: Vec<(&'static str, String)>| loops_n(8, body, headers);
    let (attack, hostile) = hostile_of(name);
    match attack {
        "query flood" => tasks.extend(loops(call("misbehave", json!({"action": "flood"})), vec![])),
        "huge labels" => tasks.extend(loops(
            call(
                "misbehave",
                json!({"action": "hugeLabel", "bytes": 1 << 20}),
            ),
            vec![],
        )),
        "spin" => tasks.extend(loops(call(hostile, json!({"action": "loop"})), vec![])),
        "memory bomb" => tasks.extend(loops(call(hostile, json!({"action": "grow"})), vec![])),
        "output bomb" => tasks.extend(loops(
            call(
                hostile,
                json!({"action": "big", "bytes": 4 * 1024 * 1024 - 100}),
            ),
            vec![],
        )),
        "log flood" => tasks.extend(loops(
            call("misbehave", json!({"action": "logFlood", "bytes": 100_000})),
            vec![],
        )),
        "searchText bomb" => tasks.extend(loops(
            call(
                "report_loans",
                json!({"groupBy": "Status", "filter": {"searchText": "@ ".repeat(7000)}}),
            ),
            vec![],
        )),
        "batch flood" => {
            let one = call("get_loan_reporting_metadata", json!({}));
            tasks.extend(loops(
                Value::Array(vec![one.clone(); 16]),
                vec![("mcp-protocol-version", "2025-03-26".into())],
            ));
            tasks.extend(loops(
                Value::Array(vec![one; 1000]),
                vec![("mcp-protocol-version", "2025-03-26".into())],
            ));
        }
        "batched view reads" => {
            let read = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "ui://loanhost/report_loans"}});
            tasks.extend(loops(
                Value::Array(vec![read; 16]),
                vec![("mcp-protocol-version", "2025-03-26".into())],
            ));
        }
        "table hoard" => tasks.extend(loops(call("hoardtabs", json!({"action": "echo"})), vec![])),
        "compile bomb" => {
            let dir = server.plugin_dir.clone();
            let (client, base, count, token) =
                (client.clone(), base.clone(), count.clone(), token.clone());
            tasks.push(tokio::spawn(async move {
                std::fs::write(
                    dir.join("bomb.toml"),
                    HOSTILE_MANIFEST.replace("\"misbehave\"", "\"bomb\""),
                )
                .unwrap();
                let tmp = dir.join(".bomb.wasm.tmp");
                std::fs::write(&tmp, compile_bomb(150_000)).unwrap();
                std::fs::rename(&tmp, dir.join("bomb.wasm")).unwrap();
                count("written".into());
                watch_listing(client, base, token, "bomb", until, count).await;
            }));
        }
        "many memories" => {
            let mut text = String::from("(component (core module $m (memory 1))");
            for i in 0..120 {
                text.push_str(&format!(" (core instance $i{i} (instantiate $m))"));
            }
            text.push(')');
            let wasm = wat::parse_str(&text).unwrap();
            let dir = server.plugin_dir.clone();
            let written = count.clone();
            tasks.push(tokio::spawn(async move {
                std::fs::write(
                    dir.join("hoard.toml"),
                    HOSTILE_MANIFEST.replace("\"misbehave\"", "\"hoard\""),
                )
                .unwrap();
                let mut n = 0u64;
                while Instant::now() < until {
                    // A new file each time (another byte at the end), so each one is loaded.
                    let mut bytes = wasm.clone();
                    n += 1;
                    bytes.extend_from_slice(&[0, 1, b'x', (n % 250) as u8]);
                    let tmp = dir.join(".hoard.wasm.tmp");
                    std::fs::write(&tmp, &bytes).unwrap();
                    std::fs::rename(&tmp, dir.join("hoard.wasm")).unwrap();
                    written("written".into());
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }));
            let (client, base, count, token) =
                (client.clone(), base.clone(), count.clone(), token.clone());
            tasks.push(tokio::spawn(watch_listing(
                client, base, token, "hoard", until, count,
            )));
        }
        "slow headers" => {
            let addr = base.trim_start_matches("http://").to_string();
            for _ in 0..400 {
                let (addr, count) = (addr.clone(), count.clone());
                tasks.push(tokio::spawn(async move {
                    while Instant::now() < until {
                        let Ok(mut s) = tokio::net::TcpStream::connect(&addr).await else {
                            count("connect refused".into());
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            continue;
                        };
                        let _ = s.write_all(b"POST /mcp HTTP/1.1\r\n").await;
                        let opened = Instant::now();
                        loop {
                            tokio::time::sleep(Duration::from_millis(500)).await;
                            // A connection still open when the phase ends is given the server's
                            // header timeout and a wide margin before it counts as held: on a
                            // busy machine the server's timer and the closing write run late,
                            // and the phase's own clock must not decide the outcome.
                            if Instant::now() >= until + Duration::from_secs(30) {
                                count("held until the end".into());
                                return;
                            }
                            if s.write_all(b"X").await.is_err() {
                                count(format!(
                                    "closed by the server after {} s",
                                    opened.elapsed().as_secs()
                                ));
                                break;
                            }
                        }
                    }
                }));
            }
        }
        "oversized bodies" => {
            let addr = base.trim_start_matches("http://").to_string();
            for i in 0..8 {
                let (addr, count, token) = (addr.clone(), count.clone(), token.clone());
                tasks.push(tokio::spawn(async move {
                    while Instant::now() < until {
                        let auth = if i % 2 == 0 {
                            format!("Authorization: Bearer {token}\r\n")
                        } else {
                            String::new()
                        };
                        let Ok(mut s) = tokio::net::TcpStream::connect(&addr).await else {
                            count("connect refused".into());
                            continue;
                        };
                        let head = format!(
                            "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{auth}Content-Length: 104857600\r\n\r\n"
                        );
                        let _ = s.write_all(head.as_bytes()).await;
                        let _ = s.write_all(&[b' '; 65536]).await;
                        let mut buf = [0u8; 64];
                        let n = tokio::io::AsyncReadExt::read(&mut s, &mut buf)
                            .await
                            .unwrap_or(0);
                        let line = String::from_utf8_lossy(&buf[..n]);
                        count(line.lines().next().unwrap_or("closed").to_string());
                    }
                }));
            }
        }
        "token flood" => {
            let expired = server.token(ADMIN, -3600);
            let forged = {
                let other =
                    SigningKey::load_or_create(&tempfile::tempdir().unwrap().path().join("k.pem"))
                        .unwrap();
                other
                    .sign(&json!({"iss": format!("{base}/dev-idp"), "aud": "https://loanhost.local/mcp", "email": ADMIN, "exp": 4_000_000_000u64}))
                    .unwrap()
            };
            let unknown_kid = {
                let mut parts: Vec<String> = forged.split('.').map(str::to_string).collect();
                use base64::Engine as _;
                parts[0] = base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .encode(br#"{"alg":"RS256","typ":"JWT","kid":"forged"}"#);
                parts.join(".")
            };
            for (i, bad) in [expired, forged, unknown_kid]
                .into_iter()
                .cycle()
                .take(8)
                .enumerate()
            {
                let (client, base, count) = (client.clone(), base.clone(), count.clone());
                tasks.push(tokio::spawn(async move {
                    let _ = i;
                    while Instant::now() < until {
                        let r = client
                            .post(format!("{base}/mcp"))
                            .bearer_auth(&bad)
                            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
                            .send()
                            .await;
                        count(outcome(r).await);
                    }
                }));
            }
        }
        "slow bodies /token" => tasks.extend(trickled_bodies(
            &base,
            "/token",
            "Content-Type: application/x-www-form-urlencoded\r\n".into(),
            until,
            count.clone(),
        )),
        "slow bodies REST token" => tasks.extend(trickled_bodies(
            &base,
            "/api/oauth/token",
            format!("Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"),
            until,
            count.clone(),
        )),
        "slow bodies /mcp" => tasks.extend(trickled_bodies(
            &base,
            "/mcp",
            format!("Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"),
            until,
            count.clone(),
        )),
        "hostile registry" => {
            // The registry the server follows turns hostile, one way per connection, for the
            // phase; what the attacker got is what the server took from it.
            let registry = &server.registry;
            let sent_before = registry.sent.load(std::sync::atomic::Ordering::Relaxed);
            let asked_before = registry.requests("").len();
            registry.set(Mode::Rotate(vec![
                Mode::Endless { declared: false },
                Mode::Digest("sha256:../../..".into()),
                Mode::Hang,
                Mode::ErrorBody("boom\n2026-12-01T00:00:00Z  INFO loanhost: forged\n".repeat(500)),
                Mode::Endless { declared: true },
                Mode::Digest(format!("sha256:{}", server.plugin_dir.display())),
            ]));
            tokio::time::sleep_until(until.into()).await;
            registry.set(Mode::NotFound);
            let asked = registry.requests("").len() - asked_before;
            let sent = registry.sent.load(std::sync::atomic::Ordering::Relaxed) - sent_before;
            for _ in 0..asked {
                count("registry requests answered hostile".into());
            }
            count(format!("manifest bytes offered: {} MiB", sent >> 20));
            let largest = registry.largest.load(std::sync::atomic::Ordering::Relaxed);
            if largest > 16 << 20 {
                count(format!(
                    "READ PAST THE CAP: {largest} bytes on one connection"
                ));
            }
            let listed = client
                .post(format!("{base}/mcp"))
                .bearer_auth(&token)
                .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
                .send()
                .await;
            if let Ok(r) = listed {
                let text = r.text().await.unwrap_or_default();
                if text.contains("probe_") {
                    count("a hostile reference LISTED".into());
                }
            }
            if !server.plugin_dir.join("report_loans.wasm").is_file() {
                count("the plugin folder was REMOVED".into());
            }
        }
        "nested arguments" => {
            let deep = nested_arguments(120, 8 * 1024);
            tasks.extend(loops_n(4, call("no_such_tool", deep.clone()), vec![]));
            tasks.extend(loops_n(4, call("report_loans", deep), vec![]));
        }
        other => panic!("unknown attack {other}"),
    }
    for t in tasks {
        t.await.unwrap();
    }
    let out = outcomes.lock().unwrap().clone();
    out
}
