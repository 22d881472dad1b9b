//! `docs/clients.md` as a newcomer follows it: each configuration marked `<!-- checked: … -->`
//! is read from the page and run against a server by the client it is for (the Inspector and
//! `mcp-remote` from `tests/clients`, pinned to the versions the page names), or, for VS Code,
//! by sending the request its configuration describes.

use std::path::Path;

use serde_json::{json, Value};

use crate::helpers::{root, spawn_app_with, tool_manifest, tool_wasm, AppOptions, TestApp};

/// The demo server's URL, as the page writes it.
const PAGE_URL: &str = "http://127.0.0.1:8080/mcp";

/// The fenced block after `<!-- checked: {name} -->` in docs/clients.md.
fn checked_block(name: &str) -> String {
    let page = std::fs::read_to_string(root().join("docs/clients.md")).unwrap();
    let marker = format!("<!-- checked: {name} -->\n```");
    let start = page
        .find(&marker)
        .unwrap_or_else(|| panic!("docs/clients.md has no block marked `{name}`"));
    let body = &page[start + marker.len()..];
    let body = &body[body.find('\n').unwrap() + 1..];
    body[..body.find("\n```").unwrap()].to_string()
}

/// The version of an npm package in tests/clients/package.json.
fn pinned(package: &str) -> String {
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(root().join("tests/clients/package.json")).unwrap())
            .unwrap();
    manifest["dependencies"][package]
        .as_str()
        .unwrap_or_else(|| panic!("{package} is not pinned in tests/clients"))
        .to_string()
}

async fn app_with_reports() -> TestApp {
    let tool = "report_loans";
    spawn_app_with(AppOptions::with_tool("get_loan_reporting_metadata").plugin(
        tool,
        tool_wasm(tool),
        tool_manifest(tool),
    ))
    .await
}

#[tokio::test]
async fn the_vs_code_configuration_reaches_the_server_with_its_token() {
    // Arrange
    let config: Value = serde_json::from_str(&checked_block("vscode")).unwrap();
    let server = &config["servers"]["loanhost"];
    let app = app_with_reports().await;

    // Act: the request VS Code makes from it, the prompted input filled in.
    let input = &config["inputs"][0];
    let header = server["headers"]["Authorization"]
        .as_str()
        .unwrap()
        .replace(
            &format!("${{input:{}}}", input["id"].as_str().unwrap()),
            &app.bearer("agent-token"),
        );
    let url = server["url"]
        .as_str()
        .unwrap()
        .replace(PAGE_URL, &format!("{}/mcp", app.base));
    let resp = app
        .client
        .post(url)
        .header("Authorization", header)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "Visual Studio Code", "version": "1.106"}}}),
        )
        .send()
        .await
        .unwrap();

    // Assert: the README's snippet is the same configuration.
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let snippet = &readme[readme.find("## Connect an AI client").unwrap()..];
    let snippet = &snippet[snippet.find("```json\n").unwrap() + 8..];
    let snippet: Value = serde_json::from_str(&snippet[..snippet.find("```").unwrap()]).unwrap();
    assert_eq!(snippet, config);
    assert_eq!(server["type"], "http");
    assert_eq!(server["url"], PAGE_URL);
    assert_eq!(input["type"], "promptString");
    assert_eq!(input["password"], true);
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["result"]["serverInfo"]["name"], "loanhost");
}

#[tokio::test]
async fn the_inspector_command_runs_as_written_with_its_pinned_version() {
    // Arrange: the page's command, its package spec and the URL replaced by the local
    // Inspector and the test server.
    let command = checked_block("inspector").replace("\\\n", " ");
    let words: Vec<&str> = command.split_whitespace().collect();
    let spec = format!(
        "@modelcontextprotocol/inspector@{}",
        pinned("@modelcontextprotocol/inspector")
    );
    assert_eq!(&words[..3], ["npx", "-y", spec.as_str()], "{command}");
    let app = app_with_reports().await;
    let mut args: Vec<String> = Vec::new();
    let mut rest = words[3..].iter();
    while let Some(word) = rest.next() {
        match *word {
            PAGE_URL => args.push(format!("{}/mcp", app.base)),
            "--header" => {
                // `"Authorization: Bearer $TOKEN"`: two shell words, quoted.
                let (a, b, c) = (
                    rest.next().unwrap(),
                    rest.next().unwrap(),
                    rest.next().unwrap(),
                );
                assert_eq!([*a, *b, *c], ["\"Authorization:", "Bearer", "$TOKEN\""]);
                args.push("--header".into());
                args.push(format!(
                    "Authorization: Bearer {}",
                    app.bearer("agent-token")
                ));
            }
            other => args.push(other.to_string()),
        }
    }

    // Act
    let out =
        tokio::process::Command::new(loanhost_tests::clients().join("node_modules/.bin/node"))
            .arg(loanhost_tests::clients().join(
                "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js",
            ))
            .args(&args)
            .current_dir(loanhost_tests::clients())
            .kill_on_drop(true)
            .output()
            .await
            .unwrap();

    // Assert: the tool's answer, grouped by status as the page asks.
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert_ne!(result["isError"], true, "{result}");
    assert_eq!(result["structuredContent"]["groupBy"], "Status", "{result}");
}

#[tokio::test]
async fn mcp_remote_bridges_a_stdio_client_with_the_pages_configuration() {
    // Arrange: the page's arguments, with the test server's URL and a header file of its own.
    let config: Value = serde_json::from_str(&checked_block("mcp-remote")).unwrap();
    let server = &config["mcpServers"]["loanhost"];
    let args: Vec<String> = server["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    assert_eq!(server["command"], "npx");
    assert_eq!(
        args[..2],
        [
            "-y".to_string(),
            format!("mcp-remote@{}", pinned("mcp-remote"))
        ]
    );
    let app = app_with_reports().await;
    let scratch = tempfile::tempdir().unwrap();
    let headers = scratch.path().join("loanhost.headers");
    std::fs::write(
        &headers,
        format!("Authorization: Bearer {}\n", app.bearer("agent-token")),
    )
    .unwrap();
    let mut bridged: Vec<String> = Vec::new();
    for (i, a) in args[2..].iter().enumerate() {
        let previous = if i == 0 { "" } else { args[2 + i - 1].as_str() };
        bridged.push(match (previous, a.as_str()) {
            (_, PAGE_URL) => format!("{}/mcp", app.base),
            ("--header-file", _) => headers.display().to_string(),
            _ => a.clone(),
        });
    }

    // Act: a stdio client's session through the bridge.
    let answers = stdio_session(&bridged, scratch.path()).await;

    // Assert
    assert_eq!(
        answers[0]["result"]["serverInfo"]["name"], "loanhost",
        "{answers:?}"
    );
    let names: Vec<&str> = answers[1]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"report_loans"), "{names:?}");
    let call = &answers[2]["result"];
    assert_ne!(call["isError"], true, "{call}");
    assert_eq!(call["structuredContent"]["groupBy"], "Status", "{call}");
}

/// Starts `mcp-remote` with `args`, sends `initialize`, `tools/list` and a `tools/call` over its
/// stdin, one line each, and returns the three answers (two minutes at most).
async fn stdio_session(args: &[String], home: &Path) -> Vec<Value> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let mut child =
        tokio::process::Command::new(loanhost_tests::clients().join("node_modules/.bin/node"))
            .arg(loanhost_tests::clients().join("node_modules/mcp-remote/dist/proxy.js"))
            .args(args)
            .env("MCP_REMOTE_CONFIG_DIR", home.join("mcp-auth"))
            .current_dir(loanhost_tests::clients())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "a stdio client", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "report_loans", "arguments": {"groupBy": "Status"}}}),
    ];
    let session = async {
        let mut answers = Vec::new();
        for (n, request) in requests.iter().enumerate() {
            stdin
                .write_all(format!("{request}\n").as_bytes())
                .await
                .unwrap();
            if n == 0 {
                // The answer to `initialize`, then the notification a client sends after it.
                answers.push(next_answer(&mut lines).await);
                let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
                stdin
                    .write_all(format!("{initialized}\n").as_bytes())
                    .await
                    .unwrap();
                continue;
            }
            answers.push(next_answer(&mut lines).await);
        }
        answers
    };
    tokio::time::timeout(std::time::Duration::from_secs(120), session)
        .await
        .expect("mcp-remote answered within 2 minutes")
}

/// The next JSON-RPC response on the bridge's stdout (notifications skipped).
async fn next_answer(
    lines: &mut tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
) -> Value {
    loop {
        let line = lines
            .next_line()
            .await
            .unwrap()
            .expect("mcp-remote ended its output");
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if message.get("id").is_some() {
            return message;
        }
    }
}
