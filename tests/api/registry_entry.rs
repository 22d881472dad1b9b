//! The MCP Registry entry (`server.json` at the root): valid against the registry's published
//! schema it names (2025-12-11) and the registry's publishing rules, checked by an independent
//! linter that bundles the released schemas (`skillsaw`, PyPI); its version is the server's; its
//! remote, with the template variable filled in, is a loanhost `/mcp` endpoint.

use serde_json::Value;

use crate::helpers::{python, root, spawn_app};

/// `skillsaw lint` of the registry rules over a folder holding `entry` as `server.json`:
/// whether it passed, and what it printed.
async fn lint(entry: &Value) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("server.json"),
        serde_json::to_string_pretty(entry).unwrap(),
    )
    .unwrap();
    let out = tokio::process::Command::new(python().with_file_name("skillsaw"))
        .args([
            "lint",
            "--strict",
            "--no-baseline",
            "--no-custom-rules",
            "--no-plugins",
            "--no-progress",
            "--no-color",
            "--rule",
            "mcp-registry-server-json-valid",
            "--rule",
            "mcp-registry-version-semver",
        ])
        .arg(dir.path())
        .output()
        .await
        .expect(
            "running skillsaw (run `make test`, which installs tests/clients/requirements.txt)",
        );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn entry() -> Value {
    serde_json::from_slice(&std::fs::read(root().join("server.json")).unwrap()).unwrap()
}

#[tokio::test]
async fn the_registry_entry_is_valid_and_names_this_server() {
    // Arrange
    let entry = entry();
    let app = spawn_app().await;
    let remote = &entry["remotes"][0];
    let host = app.base.strip_prefix("http://").unwrap();

    // Act
    let (valid, report) = lint(&entry).await;
    let url = remote["url"].as_str().unwrap().replace("{host}", host);
    let answer = app
        .client
        .post(url.replacen("https://", "http://", 1))
        .json(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();

    // Assert
    assert!(valid, "{report}");
    assert!(report.contains("Repo type: mcp-registry"), "{report}");
    assert_eq!(entry["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(remote["type"], "streamable-http");
    assert_eq!(remote["variables"]["host"]["isRequired"], true);
    // The remote is loanhost's /mcp: it asks for OAuth as the spec says.
    assert_eq!(answer.status(), 401);
    assert!(answer.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .contains("resource_metadata"));
}

#[tokio::test]
async fn the_linter_refuses_a_broken_entry() {
    // Arrange: what a careless edit would do.
    let mut no_description = entry();
    no_description
        .as_object_mut()
        .unwrap()
        .remove("description");
    let mut plain_http = entry();
    plain_http["remotes"][0]["url"] = "http://{host}/mcp".into();
    let mut undeclared = entry();
    undeclared["remotes"][0]["url"] = "https://{host}/{path}".into();

    for (what, broken) in [
        ("no description", no_description),
        ("plain http", plain_http),
        ("an undeclared variable", undeclared),
    ] {
        // Act
        let (valid, report) = lint(&broken).await;

        // Assert
        assert!(!valid, "{what} passed: {report}");
    }
}
