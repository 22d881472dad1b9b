//! The JSON-RPC surface of `/mcp`: negotiation, notifications, error codes, 401.

use serde_json::json;

use crate::helpers::spawn_app;

#[tokio::test]
async fn initialize_negotiates_a_supported_version() {
    // Arrange
    let app = spawn_app().await;

    for (asked, answered) in [
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2024-11-05", "2025-11-25"),
    ] {
        // Act
        let reply = app
            .rpc("agent-token", "initialize", json!({"protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}))
            .await;

        // Assert
        assert_eq!(
            reply["result"]["protocolVersion"], answered,
            "asked {asked}"
        );
        assert_eq!(
            reply["result"]["capabilities"]["tools"]["listChanged"],
            false
        );
        assert_eq!(reply["result"]["serverInfo"]["name"], "loanhost");
    }
}

#[tokio::test]
async fn notifications_get_202_with_no_body() {
    // Arrange
    let app = spawn_app().await;

    // Act
    let resp = app
        .post_mcp(
            Some("agent-token"),
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await;

    // Assert
    assert_eq!(resp.status(), 202);
    assert!(resp.text().await.unwrap().is_empty());
}

#[tokio::test]
async fn json_rpc_errors_have_the_standard_codes() {
    // Arrange
    let app = spawn_app().await;

    // Act
    let unknown_method = app.rpc("agent-token", "prompts/list", json!({})).await;
    let unknown_tool = app
        .rpc(
            "agent-token",
            "tools/call",
            json!({"name": "nope", "arguments": {}}),
        )
        .await;
    let missing_name = app
        .rpc("agent-token", "tools/call", json!({"arguments": {}}))
        .await;
    let invalid = app
        .post_mcp(
            Some("agent-token"),
            &json!({"jsonrpc": "1.0", "id": 7, "method": "ping"}),
        )
        .await;
    let invalid: serde_json::Value = invalid.json().await.unwrap();
    let malformed = app
        .client
        .post(format!("{}/mcp", app.base))
        .bearer_auth(app.bearer("agent-token"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();

    // Assert
    assert_eq!(unknown_method["error"]["code"], -32601);
    assert_eq!(unknown_tool["error"]["code"], -32602);
    assert_eq!(unknown_tool["error"]["message"], "Unknown tool: nope");
    assert_eq!(missing_name["error"]["code"], -32602);
    assert_eq!(
        (invalid["id"].clone(), invalid["error"]["code"].clone()),
        (json!(7), json!(-32600))
    );
    assert_eq!(malformed.status(), 400);
    let malformed: serde_json::Value = malformed.json().await.unwrap();
    assert_eq!(malformed["error"]["code"], -32700);
}

#[tokio::test]
async fn ping_answers_empty_result() {
    let app = spawn_app().await;
    let reply = app.rpc("agent-token", "ping", json!({})).await;
    assert_eq!(reply["result"], json!({}));
}

#[tokio::test]
async fn unauthenticated_calls_get_the_exact_challenge() {
    // Arrange
    let app = spawn_app().await;

    // Act
    let resp = app
        .post_mcp(
            None,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await;

    // Assert
    assert_eq!(resp.status(), 401);
    let challenges: Vec<String> = resp
        .headers()
        .get_all("www-authenticate")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect();
    assert_eq!(
        challenges,
        vec![
            format!(
                "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource\"",
                app.base
            ),
            "Bearer".to_string()
        ]
    );
    assert!(resp.text().await.unwrap().is_empty());
}

#[tokio::test]
async fn health_is_unauthenticated() {
    let app = spawn_app().await;
    let resp = app
        .client
        .get(format!("{}/health", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["status"], "ok");
}
