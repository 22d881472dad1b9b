//! Real MCP clients that nobody here wrote, against a real server: the official Python SDK
//! with a bearer token (both connect modes) and through the full OAuth flow with refresh, and
//! the TypeScript SDK's v2 client (2026-07-28) and v1 client (2025-11-25).

use serde_json::Value;

use crate::helpers::{python, root, spawn_app, spawn_app_with, AppOptions};

/// Runs `tests/clients/python_sdk_client.py` with `args`; the JSON of its last line.
pub(crate) async fn python_client(args: &[&str]) -> Value {
    let script = root().join("tests/clients/python_sdk_client.py");
    let out = tokio::process::Command::new(python())
        .arg(&script)
        .args(args)
        .output()
        .await
        .unwrap_or_else(|e| {
            panic!(
                "running {} (run `make test`, which creates .venv): {e}",
                python().display()
            )
        });
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "python client failed: {}\n{stderr}",
        out.status
    );
    serde_json::from_str(stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("bad output {stdout}: {e}\n{stderr}"))
}

fn assert_metadata_session(result: &Value) {
    assert_eq!(
        result["tools"],
        serde_json::json!(["get_loan_reporting_metadata"])
    );
    assert_eq!(result["readOnly"], serde_json::json!([true]));
    assert_eq!(result["isError"], false);
    assert_eq!(
        result["structured"]["statuses"].as_array().unwrap().len(),
        45
    );
    assert_eq!(
        result["structured"]["northstarStages"][4],
        "5. Closed & Funded"
    );
    assert_eq!(result["badIsError"], true);
    assert!(result["badText"]
        .as_str()
        .unwrap()
        .starts_with("invalid_params: unknown field `userId`"));
}

#[tokio::test]
async fn python_sdk_with_a_bearer_token_probing_discover_first() {
    // Arrange
    let app = spawn_app().await;

    // Act: mode "auto" first POSTs server/discover with MCP-Protocol-Version 2026-07-28 and
    // stays on that revision when the server answers it (no initialize, no fallback).
    let result = python_client(&[
        "bearer",
        &format!("{}/mcp", app.base),
        &app.bearer("agent-token"),
        "auto",
    ])
    .await;

    // Assert
    assert_metadata_session(&result);
    assert_eq!(result["protocolVersion"], "2026-07-28");
}

#[tokio::test]
async fn python_sdk_with_a_bearer_token_in_legacy_mode() {
    // Arrange
    let app = spawn_app().await;

    // Act
    let result = python_client(&[
        "bearer",
        &format!("{}/mcp", app.base),
        &app.bearer("agent-token"),
        "legacy",
    ])
    .await;

    // Assert
    assert_metadata_session(&result);
    assert_eq!(result["protocolVersion"], "2025-11-25");
}

/// What the OAuth run of the Python client must show: one sign-in, a `401` on the expired
/// token, then a `refresh_token` grant that the token endpoint honoured, and the call after
/// expiry answered with the new token.
fn assert_one_sign_in_then_a_refresh(result: &Value) {
    assert_eq!(result["authorizeCount"], 1, "exactly one sign-in: {result}");
    assert_eq!(
        result["expiredStatus"], 401,
        "with no leeway, the expired token is refused"
    );
    assert_eq!(
        result["tokenRequests"],
        serde_json::json!([
            {"grantType": "authorization_code", "status": 200},
            {"grantType": "refresh_token", "status": 200}
        ]),
        "{result}"
    );
    assert_eq!(result["hasRefreshToken"], true);
    assert_eq!(result["refreshedAccessToken"], true);
    assert_eq!(result["secondIsError"], false);
}

#[tokio::test]
async fn python_sdk_full_oauth_flow_with_refresh_after_expiry() {
    // Arrange: access tokens live 2 s and no clock skew is tolerated, so the client must
    // refresh during the session.
    let mut options = AppOptions::default().plugin(
        "get_loan_reporting_metadata",
        crate::helpers::tool_wasm("get_loan_reporting_metadata"),
        crate::helpers::tool_manifest("get_loan_reporting_metadata"),
    );
    options.env.push(("LOANHOST_DEV_IDP_TOKEN_TTL", "2".into()));
    options.env.push(("LOANHOST_TOKEN_LEEWAY_SECS", "0".into()));
    let app = spawn_app_with(options).await;

    for (mode, revision) in [("auto", "2026-07-28"), ("legacy", "2025-11-25")] {
        // Act
        let result = python_client(&["oauth", &app.base, "agent@example.com", mode]).await;

        // Assert
        assert_metadata_session(&result["first"]);
        assert_eq!(result["first"]["protocolVersion"], revision, "{mode}");
        assert_eq!(result["idpQuery"]["audience"], "https://loanhost.local/mcp");
        assert!(result["idpQuery"]["scope"]
            .as_str()
            .unwrap()
            .split(' ')
            .any(|s| s == "offline_access"));
        assert!(
            result["idpQuery"].get("resource").is_none(),
            "resource is stripped"
        );
        assert_eq!(result["idpQuery"]["code_challenge_method"], "S256");
        assert_eq!(result["expiresIn"], 2);
        assert_one_sign_in_then_a_refresh(&result);
    }
}

#[tokio::test]
async fn python_sdk_refreshes_through_the_facade_over_oauth2_mock_server() {
    // Arrange: the upstream IdP is oauth2-mock-server, issuing 2 s access tokens.
    let idp = crate::upstream_idp::mock_idp_with("agent@example.com", 2).await;
    let mut options = AppOptions::default().plugin(
        "get_loan_reporting_metadata",
        crate::helpers::tool_wasm("get_loan_reporting_metadata"),
        crate::helpers::tool_manifest("get_loan_reporting_metadata"),
    );
    options.env.extend(idp.settings());
    options.env.push(("LOANHOST_TOKEN_LEEWAY_SECS", "0".into()));
    let app = spawn_app_with(options).await;

    // Act
    let result = python_client(&["oauth", &app.base, "agent@example.com", "auto"]).await;

    // Assert
    assert_metadata_session(&result["first"]);
    assert_eq!(result["first"]["protocolVersion"], "2026-07-28");
    assert_eq!(result["expiresIn"], 2);
    assert_one_sign_in_then_a_refresh(&result);
}

/// Runs `tests/clients/ts_sdk_client.mjs` with Node 22 from `tests/clients`.
async fn ts_client(flavour: &str, url: &str, token: &str) -> Value {
    node_client("ts_sdk_client.mjs", &[flavour, url, token]).await
}

/// Runs the TypeScript client `script` of `tests/clients` with Node 22 and `args`; the JSON
/// of its last line.
pub(crate) async fn node_client(script: &str, args: &[&str]) -> Value {
    let clients = root().join("tests/clients");
    let out = tokio::process::Command::new(clients.join("node_modules/.bin/node"))
        .arg(script)
        .args(args)
        .current_dir(&clients)
        .output()
        .await
        .expect("running node (run `make test`, which installs tests/clients)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "TypeScript client {script} {args:?} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap()
}

#[tokio::test]
async fn typescript_sdk_v2_speaks_2026_07_28_and_v1_speaks_2025_11_25() {
    // Arrange
    let app = spawn_app().await;
    let url = format!("{}/mcp", app.base);
    let token = app.bearer("agent-token");

    for (flavour, revision) in [
        ("v2", "2026-07-28"),
        ("v2-auto", "2026-07-28"),
        ("v1", "2025-11-25"),
    ] {
        // Act
        let result = ts_client(flavour, &url, &token).await;

        // Assert
        assert_eq!(result["protocolVersion"], revision, "{flavour}: {result}");
        assert_eq!(
            result["tools"],
            serde_json::json!(["get_loan_reporting_metadata"])
        );
        assert_eq!(
            (result["isError"].clone(), result["statuses"].clone()),
            (serde_json::json!(false), serde_json::json!(45))
        );
        assert_eq!(result["badIsError"], true);
        assert!(
            result["badText"]
                .as_str()
                .unwrap()
                .starts_with("invalid_params: unknown field `userId`"),
            "{result}"
        );
    }
}

/// Several argument sets per tool, for the output-schema check: every grouping family, metric
/// and date field of `report_loans`, both granularities and groupings of the milestone report,
/// both buckets of the Data Warehouse reports, filters that leave buckets without values.
fn output_schema_calls() -> Value {
    serde_json::json!([
        {"tool": "get_loan_reporting_metadata", "arguments": {}},
        {"tool": "report_loans", "arguments": {}},
        {"tool": "report_loans", "arguments": {"groupBy": "Status"}},
        {"tool": "report_loans", "arguments": {"groupBy": "LoanOfficer", "metric": "Average"}},
        {"tool": "report_loans", "arguments": {"groupBy": "ReferringAgent", "metric": "Sum", "metricField": "EstimatedCompensation"}},
        {"tool": "report_loans", "arguments": {"groupBy": "Month", "metric": "Max", "metricField": "LockedCompensation"}},
        {"tool": "report_loans", "arguments": {"groupBy": "Quarter", "dateField": "ClosingDate", "metric": "Min"}},
        {"tool": "report_loans", "arguments": {"groupBy": "LoanType", "filter": {"loanTypes": ["VA"], "statuses": ["Loan Funded"]}}},
        {"tool": "report_loans", "arguments": {"groupBy": "Year", "filter": {"loanAmountMin": 999999999}}},
        {"tool": "loan_pipeline_report", "arguments": {}},
        {"tool": "loan_pipeline_report", "arguments": {"lookbackMonths": 12, "filter": {"purposes": ["Purchase"]}}},
        {"tool": "report_loan_milestones", "arguments": {}},
        {"tool": "report_loan_milestones", "arguments": {"granularity": "Week", "lookback": 6}},
        {"tool": "report_loan_milestones", "arguments": {"groupByNorthstar": false, "excludeStages": ["Other"]}},
        {"tool": "mlo_pipeline_report", "arguments": {}},
        {"tool": "mlo_pipeline_report", "arguments": {"bucket": "Week", "fromDate": "2025-10-01"}},
        {"tool": "warehouse_loan_milestone_report", "arguments": {"fromDate": "2025-01-01", "toDate": "2026-03-15"}},
        {"tool": "warehouse_loan_milestone_report", "arguments": {"fromDate": "2026-01-01", "toDate": "2026-03-15", "bucket": "Week"}}
    ])
}

#[tokio::test]
async fn every_tool_result_validates_against_its_output_schema_in_an_independent_validator() {
    // Arrange: all six tools on seeded data; an Admin (org-wide) and an Agent (scoped) caller.
    let mut options = AppOptions::default();
    for t in crate::helpers::ALL_TOOLS {
        options = options.plugin(
            t,
            crate::helpers::tool_wasm(t),
            crate::helpers::tool_manifest(t),
        );
    }
    let app = spawn_app_with(options).await;
    crate::helpers::seed_app(&app, 11, 400).await;
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls.json");
    std::fs::write(&calls, output_schema_calls().to_string()).unwrap();
    let script = root().join("tests/clients/output_schemas.py");
    let run = |token: String| {
        let (script, calls, url) = (script.clone(), calls.clone(), format!("{}/mcp", app.base));
        async move {
            let out = tokio::process::Command::new(python())
                .arg(&script)
                .arg(&url)
                .arg(&token)
                .arg(&calls)
                .output()
                .await
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                out.status.success(),
                "{}\n{}",
                stdout,
                String::from_utf8_lossy(&out.stderr)
            );
            serde_json::from_str::<Value>(stdout.lines().last().unwrap()).unwrap()
        }
    };

    // Act
    let admin = run(app.token_for("admin@demo.loanhost.local")).await;

    // Assert
    let n = output_schema_calls().as_array().unwrap().len();
    assert_eq!(admin["failures"], serde_json::json!([]), "{admin}");
    assert_eq!(admin["checked"], n, "{admin}");
    assert_eq!(admin["tamperedCaught"], n, "{admin}");
    assert_eq!(admin["tools"].as_array().unwrap().len(), 6);
}
