//! Reports an AI client cannot misread: filter values checked against the one vocabulary (with
//! the closest accepted values named), `enum`s in the schemas equal to what the metadata tool
//! lists, `[]` as unconstrained, a `granularity` schema that says it falls back, and
//! descriptions that name only tools this server has.

use serde_json::{json, Value};

use crate::helpers::{
    seed_app, spawn_app_with, tool_manifest, tool_wasm, AppOptions, TestApp, ALL_TOOLS,
};

async fn all_tools() -> TestApp {
    let mut options = AppOptions::default();
    for t in ALL_TOOLS {
        options = options.plugin(t, tool_wasm(t), tool_manifest(t));
    }
    spawn_app_with(options).await
}

async fn listed(app: &TestApp) -> Vec<Value> {
    let reply = app.rpc("admin-token", "tools/list", json!({})).await;
    reply["result"]["tools"].as_array().unwrap().clone()
}

#[tokio::test]
async fn unknown_vocabulary_values_are_refused_naming_the_closest() {
    // Arrange
    let app = all_tools().await;

    // Act
    let status = app
        .call_err(
            "agent-token",
            "report_loans",
            json!({"filter": {"statuses": ["Loan Open", "Closed"]}}),
        )
        .await;
    let loan_type = app
        .call_err(
            "agent-token",
            "loan_pipeline_report",
            json!({"filter": {"loanTypes": ["usda"]}}),
        )
        .await;
    let purpose = app
        .call_err(
            "agent-token",
            "report_loan_milestones",
            json!({"filter": {"purposes": ["Refi"]}}),
        )
        .await;

    // Assert
    assert_eq!(status, "invalid_params: filter: `statuses`: `Closed` is not a loan status; closest: Loan Closed, Loan Sold, Loan Open (get_loan_reporting_metadata lists them all)");
    assert_eq!(loan_type, "invalid_params: filter: `loanTypes`: `usda` is not a loan type; closest: USDA/Rural Housing, FHA, VA (get_loan_reporting_metadata lists them all)");
    assert_eq!(purpose, "invalid_params: filter: `purposes`: `Refi` is not a loan purpose; closest: Refinance, Refinance Cashout, FHA Streamline Refi (get_loan_reporting_metadata lists them all)");
}

#[tokio::test]
async fn an_empty_list_is_unconstrained_like_an_omitted_field() {
    // Arrange
    let app = all_tools().await;
    seed_app(&app, 5, 300).await;
    let admin = app.token_for("admin@demo.loanhost.local");
    let empty = json!({"statuses": [], "loanTypes": [], "purposes": [], "loanOfficerIds": []});

    for (tool, args) in [
        (
            "report_loans",
            json!({"groupBy": "Status", "metric": "Sum"}),
        ),
        ("loan_pipeline_report", json!({})),
        ("report_loan_milestones", json!({"lookback": 12})),
    ] {
        // Act
        let omitted = app.call_ok(&admin, tool, args.clone()).await;
        let mut with_empty = args.clone();
        with_empty["filter"] = empty.clone();
        let emptied = app.call_ok(&admin, tool, with_empty).await;

        // Assert
        assert_eq!(emptied, omitted, "{tool}");
    }
    let total = app
        .call_ok(&admin, "report_loans", json!({"filter": empty}))
        .await;
    assert_eq!(total["totalCount"], 300);
}

#[tokio::test]
async fn schema_enums_are_the_metadata_vocabulary() {
    // Arrange
    let app = all_tools().await;

    // Act
    let tools = listed(&app).await;
    let metadata = app
        .call_ok("agent-token", "get_loan_reporting_metadata", json!({}))
        .await;

    // Assert
    let mut checked = 0;
    for tool in &tools {
        let Some(filter) = tool["inputSchema"]["properties"].get("filter") else {
            continue;
        };
        for (field, list) in [
            ("statuses", "statuses"),
            ("loanTypes", "loanTypes"),
            ("purposes", "purposes"),
        ] {
            assert_eq!(
                filter["properties"][field]["items"]["enum"], metadata[list],
                "{}: filter.{field}",
                tool["name"]
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 9, "three tools take a filter");
}

#[tokio::test]
async fn granularity_falls_back_instead_of_being_refused() {
    // Arrange
    let app = all_tools().await;

    // Act
    let tools = listed(&app).await;
    let answer = app
        .call_ok(
            "agent-token",
            "report_loan_milestones",
            json!({"granularity": "Quarterly"}),
        )
        .await;

    // Assert
    let schema = tools
        .iter()
        .find(|t| t["name"] == "report_loan_milestones")
        .unwrap()["inputSchema"]["properties"]["granularity"]
        .clone();
    assert!(
        schema.get("enum").is_none(),
        "a validating client would refuse what the server accepts: {schema}"
    );
    assert!(
        schema["description"]
            .as_str()
            .unwrap()
            .contains("falls back to Month"),
        "{schema}"
    );
    assert_eq!(answer["granularity"], "Month");
}

/// Every `snake_case` word in `v`'s strings.
fn snake_words(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => {
            for w in s.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                let parts: Vec<&str> = w.split('_').collect();
                if parts.len() > 1
                    && parts
                        .iter()
                        .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_lowercase()))
                {
                    out.push(w.to_string());
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| snake_words(x, out)),
        Value::Object(o) => o.values().for_each(|x| snake_words(x, out)),
        _ => {}
    }
}

#[tokio::test]
async fn descriptions_name_only_tools_this_server_has() {
    // Arrange
    let app = all_tools().await;

    // Act
    let tools = listed(&app).await;

    // Assert
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    let mut mentioned = Vec::new();
    for t in &tools {
        snake_words(
            &json!([t["description"], t["inputSchema"], t["outputSchema"]]),
            &mut mentioned,
        );
    }
    let strangers: Vec<&String> = mentioned
        .iter()
        .filter(|w| !names.contains(&w.as_str()))
        .collect();
    assert!(
        strangers.is_empty(),
        "descriptions name tools this server does not have: {strangers:?}"
    );
    assert!(
        mentioned.iter().any(|w| w == "report_loan_milestones"),
        "the snapshot tools point to the milestone report"
    );
}

#[tokio::test]
async fn ignored_arguments_are_invalid_params_naming_them() {
    // Arrange
    let app = all_tools().await;
    let err = |tool: &'static str, args: Value| {
        let app = &app;
        async move { app.call_err("agent-token", tool, args).await }
    };

    // Act
    let stage = err(
        "report_loan_milestones",
        json!({"excludeStages": ["Closed"]}),
    )
    .await;
    let state = err(
        "report_loans",
        json!({"filter": {"propertyState": "California"}}),
    )
    .await;
    let lookback = err("report_loan_milestones", json!({"lookback": 100_000})).await;
    let weeks = err(
        "report_loan_milestones",
        json!({"granularity": "Week", "lookback": 521}),
    )
    .await;
    let typed = err("report_loan_milestones", json!({"lookback": "2"})).await;
    let lower = app
        .call_ok(
            "agent-token",
            "report_loans",
            json!({"filter": {"propertyState": "ca"}}),
        )
        .await;
    let raw = app
        .call_ok(
            "agent-token",
            "report_loan_milestones",
            json!({"groupByNorthstar": false, "excludeStages": ["Loan Open"]}),
        )
        .await;
    let untyped = app
        .client
        .post(format!("{}/mcp", app.base))
        .bearer_auth(app.bearer("agent-token"))
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string())
        .send()
        .await
        .unwrap();
    let (untyped_status, untyped_body) = (untyped.status().as_u16(), untyped.text().await.unwrap());
    let mistyped = app
        .client
        .post(format!("{}/mcp", app.base))
        .bearer_auth(app.bearer("agent-token"))
        .header("content-type", "text/plain")
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string())
        .send()
        .await
        .unwrap();
    let mistyped_status = mistyped.status().as_u16();
    let mistyped_body: Value = mistyped.json().await.unwrap();

    // Assert
    assert_eq!(stage, "invalid_params: excludeStages: `Closed` is not a funnel stage; closest: 5. Closed & Funded, Other (the stages: 1. Opened, 2. Pre-Approved, 3. Rate Locked, 4. Approved, 5. Closed & Funded, Other)");
    assert_eq!(state, "invalid_params: filter: `propertyState`: `California` is not a state code; use the two-letter code: `CA` for California");
    assert_eq!(
        lookback,
        "invalid_params: lookback: at most 120 months (ten years); got 100000"
    );
    assert_eq!(
        weeks,
        "invalid_params: lookback: at most 520 weeks (ten years); got 521"
    );
    assert_eq!(
        typed,
        "invalid_params: lookback: invalid type: string \"2\", expected i64"
    );
    assert!(lower["totalCount"].is_number(), "{lower}");
    assert!(
        raw["buckets"].is_array(),
        "raw milestone names are not checked: {raw}"
    );
    assert_eq!(
        untyped_status, 200,
        "no Content-Type is taken as JSON: {untyped_body}"
    );
    assert_eq!(mistyped_status, 415);
    assert_eq!(
        mistyped_body["error"]["message"],
        "Content-Type must be application/json"
    );
}
