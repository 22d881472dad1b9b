//! What the attackers send or deploy: components with many tables, a renamed component, a
//! compile bomb, trickled bodies, nested arguments, and the watch on the tools' listing.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::AsyncWriteExt as _;

/// `component` with `instances` more core instances of a module that defines one table of
/// 20,000 function references (appended as a core module section and a core instance
/// section: a component's sections may come in any order).
pub(super) fn with_tables(component: &[u8], instances: u32) -> Vec<u8> {
    use wasmparser::{Encoding, Parser, Payload};
    // The index the new module takes: the component's own top-level core modules.
    let (mut depth, mut modules) = (0usize, 0u32);
    for payload in Parser::new(0).parse_all(component) {
        match payload.unwrap() {
            Payload::Version { encoding, .. } => {
                depth += 1;
                let _ = encoding == Encoding::Module;
            }
            Payload::ModuleSection { .. } if depth == 1 => modules += 1,
            Payload::End(_) => depth -= 1,
            _ => {}
        }
    }
    let leb = |mut n: u32, out: &mut Vec<u8>| loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            break;
        }
        out.push(byte | 0x80);
    };
    let section = |id: u8, body: &[u8], out: &mut Vec<u8>| {
        out.push(id);
        leb(body.len() as u32, out);
        out.extend_from_slice(body);
    };
    let module = wat::parse_str("(module (table 20000 funcref))").unwrap();
    let mut instances_body = Vec::new();
    leb(instances, &mut instances_body);
    for _ in 0..instances {
        // `instantiate` (0x00) of the new module, with no arguments.
        instances_body.push(0x00);
        leb(modules, &mut instances_body);
        instances_body.push(0x00);
    }
    let mut out = component.to_vec();
    section(0x01, &module, &mut out);
    section(0x02, &instances_body, &mut out);
    out
}

/// Until `until`, every 200 ms: whether `tools/list` lists `tool` (`LISTED`) or not (`not
/// loaded`).
pub(super) async fn watch_listing(
    client: reqwest::Client,
    base: String,
    token: String,
    tool: &'static str,
    until: Instant,
    count: impl Fn(String),
) {
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let list: Value = client
            .post(format!("{base}/mcp"))
            .bearer_auth(&token)
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let listed = list["result"]["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == tool));
        count(if listed { "LISTED" } else { "not loaded" }.into());
    }
}

/// `bytes` with every `from` replaced by `to` (of the same length).
pub(super) fn rename(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let mut out = bytes.to_vec();
    let mut i = 0;
    while i + from.len() <= out.len() {
        if &out[i..i + from.len()] == from {
            out[i..i + from.len()].copy_from_slice(to);
            i += from.len();
        } else {
            i += 1;
        }
    }
    out
}

/// A component that exports the tool's interface name (so it passes every check made from
/// its bytes) around one function of `ops` instructions: costly to compile, and refused once
/// compiled (it implements nothing).
pub(super) fn compile_bomb(ops: usize) -> Vec<u8> {
    let mut body = String::with_capacity(ops * 12);
    for _ in 0..ops / 4 {
        body.push_str("local.get 0 i32.const 1 i32.add local.set 0 ");
    }
    wat::parse_str(format!(
        "(component (core module $m (func (local i32) {body})) (core instance (instantiate $m)) \
         (instance $tool) (export \"loan:reporting/tool@1.0.0\" (instance $tool)))"
    ))
    .unwrap()
}

/// 160 connections, each announcing a body of 64 KiB to `path` and sending a byte of it
/// every 500 ms until the server answers (or the phase ends), then waiting 500 ms and
/// starting again. Each outcome is the status line, or how the connection ended.
pub(super) fn trickled_bodies(
    base: &str,
    path: &str,
    headers: String,
    until: Instant,
    count: impl Fn(String) + Clone + Send + 'static,
) -> Vec<tokio::task::JoinHandle<()>> {
    let addr = base.trim_start_matches("http://").to_string();
    (0..160)
        .map(|_| {
            let (addr, count, path, headers) =
                (addr.clone(), count.clone(), path.to_string(), headers.clone());
            tokio::spawn(async move {
                while Instant::now() < until {
                    let Ok(mut s) = tokio::net::TcpStream::connect(&addr).await else {
                        count("connect refused".into());
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        continue;
                    };
                    let head = format!(
                        "POST {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}Content-Length: 65536\r\n\r\n"
                    );
                    let _ = s.write_all(head.as_bytes()).await;
                    let mut buf = [0u8; 64];
                    let outcome = loop {
                        tokio::select! {
                            n = tokio::io::AsyncReadExt::read(&mut s, &mut buf) => {
                                let n = n.unwrap_or(0);
                                let line = String::from_utf8_lossy(&buf[..n]);
                                break line.lines().next().unwrap_or("closed").to_string();
                            }
                            _ = tokio::time::sleep(Duration::from_millis(500)) => {
                                if Instant::now() >= until {
                                    break "held until the end".to_string();
                                }
                                if s.write_all(b"a").await.is_err() {
                                    break "closed".to_string();
                                }
                            }
                        }
                    };
                    count(outcome);
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            })
        })
        .collect()
}

/// Arguments nested `depth` deep, each level one key of `key_bytes`.
pub(super) fn nested_arguments(depth: usize, key_bytes: usize) -> Value {
    let mut v = json!(1);
    for d in 0..depth {
        v = json!({ format!("{d}{}", "k".repeat(key_bytes)): v });
    }
    v
}
