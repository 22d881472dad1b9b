//! `/mcp` in protocol revision 2026-07-28, beside the handshake-era ones: `server/discover`,
//! the per-request `_meta` envelope, the mirrored headers and their errors, `resultType`,
//! caching hints, and `404` for methods this revision does not have.

use serde_json::{json, Value};

use crate::helpers::{spawn_app, TestApp};

const V: &str = "2026-07-28";

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}
    })
}

/// POSTs `body` with a bearer token and `headers`; returns status and JSON body.
async fn post(app: &TestApp, body: Value, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut req = app
        .client
        .post(format!("{}/mcp", app.base))
        .bearer_auth(app.bearer("agent-token"))
        .json(&body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// A well-formed modern request and its headers.
async fn modern(app: &TestApp, id: u64, method: &str, mut params: Value) -> (u16, Value) {
    params["_meta"] = meta();
    let name = params["name"].as_str().map(str::to_string);
    let mut headers = vec![("MCP-Protocol-Version", V), ("Mcp-Method", method)];
    if let Some(n) = &name {
        headers.push(("Mcp-Name", n.as_str()));
    }
    post(
        app,
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        &headers,
    )
    .await
}

#[tokio::test]
async fn discover_list_and_call_without_a_handshake() {
    // Arrange
    let app = spawn_app().await;

    // Act
    let (s1, discover) = modern(&app, 1, "server/discover", json!({})).await;
    let (s2, list) = modern(&app, 2, "tools/list", json!({})).await;
    let (s3, call) = modern(
        &app,
        3,
        "tools/call",
        json!({"name": "get_loan_reporting_metadata", "arguments": {}}),
    )
    .await;
    let (_, again) = modern(&app, 4, "tools/list", json!({})).await;

    // Assert
    assert_eq!((s1, s2, s3), (200, 200, 200));
    let d = &discover["result"];
    assert_eq!(
        d["supportedVersions"],
        json!(["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"])
    );
    assert_eq!(
        d["capabilities"],
        json!({
            "tools": {"listChanged": false},
            "resources": {"listChanged": false},
            "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}},
        })
    );
    assert_eq!(d["resultType"], "complete");
    assert_eq!(
        d["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "loanhost"
    );
    assert_eq!(
        (d["ttlMs"].clone(), d["cacheScope"].clone()),
        (json!(30000), json!("private"))
    );
    let l = &list["result"];
    assert_eq!(l["tools"][0]["name"], "get_loan_reporting_metadata");
    assert_eq!(
        (
            l["resultType"].clone(),
            l["ttlMs"].clone(),
            l["cacheScope"].clone()
        ),
        (json!("complete"), json!(30000), json!("private"))
    );
    assert_eq!(
        again["result"]["tools"], l["tools"],
        "a deterministic order"
    );
    let c = &call["result"];
    assert_eq!(
        (c["resultType"].clone(), c["isError"].clone()),
        (json!("complete"), json!(false))
    );
    assert_eq!(
        c["structuredContent"]["statuses"].as_array().unwrap().len(),
        45
    );
    assert!(c.get("ttlMs").is_none());
    assert_eq!(call["id"], 3);
}

#[tokio::test]
async fn the_envelope_and_the_headers_are_checked_in_order() {
    // Arrange
    let app = spawn_app().await;
    let list = |params: Value| json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": params});
    let call = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "get_loan_reporting_metadata", "arguments": {}, "_meta": meta()}});
    let h = [("MCP-Protocol-Version", V), ("Mcp-Method", "tools/list")];

    // Act
    let no_meta = post(&app, list(json!({})), &h).await;
    let no_caps = post(
        &app,
        list(json!({"_meta": {"io.modelcontextprotocol/protocolVersion": V}})),
        &h,
    )
    .await;
    let wrong_method = post(
        &app,
        list(json!({"_meta": meta()})),
        &[h[0], ("Mcp-Method", "prompts/list")],
    )
    .await;
    let no_method = post(&app, list(json!({"_meta": meta()})), &[h[0]]).await;
    let wrong_name = post(
        &app,
        call.clone(),
        &[h[0], ("Mcp-Method", "tools/call"), ("Mcp-Name", "other")],
    )
    .await;
    let spaced_name = post(
        &app,
        call.clone(),
        &[
            h[0],
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "  get_loan_reporting_metadata "),
        ],
    )
    .await;
    let no_name = post(&app, call, &[h[0], ("Mcp-Method", "tools/call")]).await;
    let mut v999 = meta();
    v999["io.modelcontextprotocol/protocolVersion"] = json!("v999");
    let mismatch = post(&app, list(json!({"_meta": v999.clone()})), &h).await;
    let unknown = post(
        &app,
        list(json!({"_meta": v999})),
        &[
            ("MCP-Protocol-Version", "v999"),
            ("Mcp-Method", "tools/list"),
        ],
    )
    .await;

    // Assert
    let code = |r: &(u16, Value)| (r.0, r.1["error"]["code"].clone(), r.1["id"].clone());
    assert_eq!(code(&no_meta), (400, json!(-32602), json!(7)));
    assert_eq!(
        no_caps.1["error"]["message"],
        "params._meta is missing io.modelcontextprotocol/clientCapabilities"
    );
    assert_eq!(code(&wrong_method), (400, json!(-32020), json!(7)));
    assert_eq!(wrong_method.1["error"]["message"], "Header mismatch: Mcp-Method header value 'prompts/list' does not match body value 'tools/list'");
    assert_eq!(code(&no_method), (400, json!(-32020), json!(7)));
    assert_eq!(code(&wrong_name), (400, json!(-32020), json!(8)));
    assert_eq!(spaced_name.0, 200, "{}", spaced_name.1);
    assert_eq!(code(&no_name), (400, json!(-32020), json!(8)));
    assert_eq!(code(&mismatch), (400, json!(-32020), json!(7)));
    assert_eq!(code(&unknown), (400, json!(-32022), json!(7)));
    assert_eq!(
        unknown.1["error"]["data"],
        json!({"supported": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"], "requested": "v999"})
    );
}

#[tokio::test]
async fn removed_and_unknown_methods_are_404_and_notifications_202() {
    // Arrange
    let app = spawn_app().await;

    for method in [
        "initialize",
        "ping",
        "logging/setLevel",
        "prompts/list",
        "unknown/method",
    ] {
        // Act
        let (status, reply) = modern(&app, 9, method, json!({})).await;

        // Assert
        assert_eq!(
            (status, reply["error"]["code"].clone(), reply["id"].clone()),
            (404, json!(-32601), json!(9)),
            "{method}"
        );
    }
    let (status, _) = post(
        &app,
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"_meta": meta()}}),
        &[
            ("MCP-Protocol-Version", V),
            ("Mcp-Method", "notifications/cancelled"),
        ],
    )
    .await;
    assert_eq!(status, 202);
    let (status, reply) = post(
        &app,
        json!([{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta()}}]),
        &[("MCP-Protocol-Version", V)],
    )
    .await;
    assert_eq!(
        (status, reply["error"]["code"].clone()),
        (400, json!(-32600))
    );
}

#[tokio::test]
async fn the_handshake_era_revisions_are_unchanged() {
    // Arrange
    let app = spawn_app().await;

    // Act: 2025-11-25 without _meta, as before; ping still answers there.
    let (s, list) = post(
        &app,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        &[("MCP-Protocol-Version", "2025-11-25")],
    )
    .await;
    let (p, ping) = post(
        &app,
        json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}),
        &[("MCP-Protocol-Version", "2025-11-25")],
    )
    .await;

    // Assert
    assert_eq!((s, p), (200, 200));
    assert!(list["result"].get("resultType").is_none() && list["result"].get("ttlMs").is_none());
    assert_eq!(ping["result"], json!({}));
}

#[tokio::test]
async fn every_tool_is_annotated_on_every_revision() {
    // Arrange: all six shipped tools.
    let mut options = crate::helpers::AppOptions::default();
    for tool in crate::helpers::ALL_TOOLS {
        options = options.plugin(
            tool,
            crate::helpers::tool_wasm(tool),
            crate::helpers::tool_manifest(tool),
        );
    }
    let app = crate::helpers::spawn_app_with(options).await;
    let mut lists = Vec::new();
    for revision in ["2025-03-26", "2025-06-18", "2025-11-25"] {
        let (status, list) = post(
            &app,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            &[("MCP-Protocol-Version", revision)],
        )
        .await;
        lists.push((revision, status, list));
    }

    // Act
    let (status, list) = modern(&app, 2, "tools/list", json!({})).await;
    lists.push((V, status, list));

    // Assert: a title and the four hints a directory of connectors asks for, on every tool.
    for (revision, status, list) in lists {
        assert_eq!(status, 200, "{revision}");
        let tools = list["result"]["tools"].as_array().unwrap();
        assert_eq!(tools.len(), crate::helpers::ALL_TOOLS.len(), "{revision}");
        for tool in tools {
            let a = &tool["annotations"];
            assert_eq!(a["title"], tool["title"], "{revision}: {tool}");
            assert!(!a["title"].as_str().unwrap().is_empty(), "{revision}");
            assert_eq!(
                (
                    &a["readOnlyHint"],
                    &a["destructiveHint"],
                    &a["idempotentHint"],
                    &a["openWorldHint"]
                ),
                (&json!(true), &json!(false), &json!(true), &json!(false)),
                "{revision}: {}",
                tool["name"]
            );
        }
    }
}
