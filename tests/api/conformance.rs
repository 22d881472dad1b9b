//! The official MCP conformance suite against a real server: `@modelcontextprotocol/conformance`
//! 0.2.0-alpha.12 with `--requirements 2026-07-28`, and 0.1.16 for the 2025-11-25 scenarios.
//! The suite sends no token, so it talks to a small token-adding proxy on loopback
//! (`tests/clients/token_proxy.mjs`), which the server lists as an allowed origin.
//! `CONFORMANCE_REPORT=<file>` writes every scenario's result as a Markdown table.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;

use loanhost_tests::clients;

use crate::helpers::{spawn_app_with, tool_manifest, tool_wasm, AppOptions, ALL_TOOLS};

/// Node 22 from `tests/clients` (the suite needs it; `make test` installs it with npm).
fn node() -> PathBuf {
    let node = clients().join("node_modules/.bin/node");
    assert!(node.exists(), "run `make test` (npm ci in tests/clients)");
    node
}

/// A running token proxy.
struct Proxy {
    url: String,
    _child: tokio::process::Child,
}

async fn token_proxy(port: u16, target: &str, token: &str) -> Proxy {
    let env = [
        ("TARGET", target.to_string()),
        ("TOKEN", token.to_string()),
        ("PORT", port.to_string()),
    ];
    let (child, first) = crate::helpers::node_peer(&node(), "token_proxy.mjs", &env).await;
    Proxy {
        url: first["url"].as_str().unwrap().to_string(),
        _child: child,
    }
}

/// Runs one release of the suite (`package` under `node_modules`) with `args`, saving results
/// to a fresh directory; returns scenario -> its checks.
async fn run_suite(package: &str, url: &str, args: &[&str]) -> BTreeMap<String, Vec<Value>> {
    let out = tempfile::tempdir().unwrap();
    let cli = clients()
        .join("node_modules")
        .join(package)
        .join("dist/index.js");
    let status = tokio::process::Command::new(node())
        .arg(cli)
        .args(["server", "--url", &format!("{url}/mcp")])
        .args(args)
        .arg("-o")
        .arg(out.path())
        .current_dir(clients())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await
        .expect("running the conformance suite");
    // A non-zero exit only says that some scenario failed; the checks say which.
    let _ = status;
    let mut scenarios = BTreeMap::new();
    for entry in walk(out.path()) {
        if entry.file_name().and_then(|n| n.to_str()) != Some("checks.json") {
            continue;
        }
        let dir = entry
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap();
        let name = scenario_name(dir);
        let checks: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(&entry).unwrap()).unwrap();
        scenarios.insert(name, checks);
    }
    assert!(!scenarios.is_empty(), "the suite wrote no results");
    scenarios
}

/// The scenario of a result directory `server-<scenario>-<YYYY-MM-DDTHH-MM-SS…>`: the
/// timestamp is found by its shape, as its own digits may hold `-20` too.
fn scenario_name(dir: &str) -> String {
    let name = dir.strip_prefix("server-").unwrap_or(dir);
    let is_timestamp = |t: &[u8]| {
        t.len() >= 11
            && t[10] == b'T'
            && [4, 7].iter().all(|&i| t[i] == b'-')
            && [0, 1, 2, 3, 5, 6, 8, 9]
                .iter()
                .all(|&i| t[i].is_ascii_digit())
    };
    name.match_indices('-')
        .find(|(i, _)| is_timestamp(&name.as_bytes()[i + 1..]))
        .map_or(name, |(i, _)| &name[..i])
        .to_string()
}

#[test]
fn scenario_names_lose_the_whole_timestamp() {
    for (dir, scenario) in [
        ("server-tools-list-2026-11-23T14-34-20-123Z", "tools-list"),
        (
            "server-server-stateless-2026-11-23T14-20-05Z",
            "server-stateless",
        ),
        (
            "server-http-header-validation-2026-11-23T14-33-54",
            "http-header-validation",
        ),
        ("server-ping-2020-01-01T00-00-00", "ping"),
    ] {
        assert_eq!(scenario_name(dir), scenario, "{dir}");
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Checks of a scenario that failed, except those `allowed` says do not apply here (the suite
/// itself reports as SKIPPED what the server's declared capabilities rule out).
fn failures(checks: &[Value], allowed: impl Fn(&Value) -> bool) -> Vec<String> {
    checks
        .iter()
        .filter(|c| !matches!(c["status"].as_str(), Some("SUCCESS" | "INFO" | "SKIPPED")))
        .filter(|c| !allowed(c))
        .map(|c| format!("{} {}: {}", c["status"], c["id"], c["errorMessage"]))
        .collect()
}

/// (passed, failed, skipped) checks.
fn tally(checks: &[Value]) -> (usize, usize, usize) {
    let count = |f: &dyn Fn(&str) -> bool| {
        checks
            .iter()
            .filter(|c| f(c["status"].as_str().unwrap_or("")))
            .count()
    };
    (
        count(&|s| matches!(s, "SUCCESS" | "INFO")),
        count(&|s| matches!(s, "FAILURE" | "WARNING")),
        count(&|s| s == "SKIPPED"),
    )
}

#[tokio::test]
async fn the_official_conformance_suite_passes_what_applies_to_a_tools_and_views_server() {
    // Arrange: every tool, the proxy's origin allowed, the proxy adding an admin's token.
    let port = crate::helpers::free_port();
    let mut options = AppOptions::default();
    for t in ALL_TOOLS {
        options = options.plugin(t, tool_wasm(t), tool_manifest(t));
    }
    options.env.push((
        "LOANHOST_ALLOWED_ORIGINS",
        format!("http://127.0.0.1:{port}"),
    ));
    let app = spawn_app_with(options).await;
    let proxy = token_proxy(port, &app.base, &app.bearer("admin-token")).await;

    // Act
    let modern = run_suite(
        "@modelcontextprotocol/conformance",
        &proxy.url,
        &["--requirements", "2026-07-28"],
    )
    .await;
    let mut legacy = BTreeMap::new();
    for scenario in [
        "server-initialize",
        "ping",
        "tools-list",
        "resources-list",
        "dns-rebinding-protection",
    ] {
        legacy.extend(
            run_suite(
                "conformance-2025-11-25",
                &proxy.url,
                &["--scenario", scenario, "--spec-version", "2025-11-25"],
            )
            .await,
        );
    }

    // Assert: the scenarios that apply to a server of tools and view resources pass; what
    // they leave untested needs diagnostic tools (test_missing_capability …), the suite's
    // own test resources (test://static-text …) or prompts, which this server does not have
    // (and answers -32601 for, as it must).
    let untestable = |c: &Value| {
        c["errorMessage"]
            .as_str()
            .is_some_and(|m| m.starts_with("Not testable:"))
    };
    let no_prompts = |c: &Value| {
        c["errorMessage"]
            .as_str()
            .is_some_and(|m| m.contains("returned JSON-RPC error -32601"))
            && c["id"] == "sep-2549-prompts-list-caching-hints"
    };
    for (scenario, allowed) in [
        ("server-stateless", &untestable as &dyn Fn(&Value) -> bool),
        ("tools-list", &|_: &Value| false),
        ("dns-rebinding-protection", &|_: &Value| false),
        ("caching", &no_prompts),
        ("resources-list", &|_: &Value| false),
        ("sep-2164-resource-not-found", &|_: &Value| false),
        ("http-header-validation", &|_: &Value| false),
    ] {
        let checks = modern
            .get(scenario)
            .unwrap_or_else(|| panic!("2026-07-28: no result for {scenario}: {:?}", modern.keys()));
        assert_eq!(
            failures(checks, allowed),
            Vec::<String>::new(),
            "2026-07-28 {scenario}"
        );
    }
    let order = &modern["tools-list"]
        .iter()
        .find(|c| c["id"] == "tools-list-deterministic-order")
        .unwrap()["status"];
    assert_eq!(order, "SUCCESS", "six tools in a deterministic order");
    let read_hints = &modern["caching"]
        .iter()
        .find(|c| c["id"] == "sep-2549-resources-read-caching-hints")
        .unwrap()["status"];
    assert_eq!(read_hints, "SUCCESS", "a view read carries caching hints");
    for (scenario, checks) in &legacy {
        assert_eq!(
            failures(checks, |_| false),
            Vec::<String>::new(),
            "2025-11-25 {scenario}"
        );
    }
    assert_eq!(legacy.len(), 5, "{:?}", legacy.keys());

    if let Some(path) = std::env::var_os("CONFORMANCE_REPORT") {
        let mut md = String::from(
            "| revision | scenario | passed | failed | skipped |\n|---|---|---|---|---|\n",
        );
        for (rev, results) in [("2026-07-28", &modern), ("2025-11-25", &legacy)] {
            for (scenario, checks) in results {
                let (p, f, k) = tally(checks);
                md.push_str(&format!("| {rev} | {scenario} | {p} | {f} | {k} |\n"));
            }
        }
        std::fs::write(path, md).unwrap();
    }
}
