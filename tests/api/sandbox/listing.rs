//! The listing capability (loan:reporting@1.2.0) through the real WIT boundary, on both
//! engines: walking every page gives each loan of the caller's scope once, in order; a cursor
//! changed, replayed by another caller, sent with another list, or continued after an import
//! is refused with its reason; a plugin without a listing grant for the dataset, or asking for
//! a field its manifest does not grant or its caller may not read, is refused; listed rows are
//! counted in the call's budget and named in the audit line.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::helpers::{
    fixture_wasm, import_lines, seed_app, spawn_app_with, AppOptions, SeededData, TestApp,
    DEFAULT_ROLES,
};

const LISTED: &str = r#"fields = ["id", "loanNumber", "status", "loanAmount", "lockedCompensation", "updated", "statusDate", "estimatedClosingDate", "loanOfficerId", "loanOfficerName"]
listing = true"#;

/// `list_echo` with `grants` (the manifest's dataset tables) and `limits` lines.
fn list_manifest(grants: &str, limits: &str) -> String {
    let roles = DEFAULT_ROLES
        .iter()
        .map(|r| format!("\"{r}\""))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "name = \"list_echo\"\nwit_version = \"1.2.0\"\nroles = [{roles}]\nscope = \"caller\"\n\n{grants}\n\n[limits]\nmemory_mib = 64\ntimeout_ms = 20000\nmax_output_bytes = 4194304\n{limits}"
    )
}

async fn listing_app(postgres: bool, grants: &str, limits: &str, audit: Option<&str>) -> TestApp {
    let mut options = AppOptions {
        postgres,
        ..AppOptions::default().plugin(
            "list_echo",
            fixture_wasm("list-echo"),
            list_manifest(grants, limits),
        )
    };
    if let Some(path) = audit {
        options.env.push(("LOANHOST_AUDIT_LOG", path.to_string()));
    }
    spawn_app_with(options).await
}

fn loans_listed() -> String {
    format!("[datasets.loans]\n{LISTED}")
}

/// A seeded Agent with loans of their own, and the ids of the loans they originate, assist or
/// referred (docs/design.md §5).
fn an_agent_with_loans(data: &SeededData) -> (String, BTreeSet<String>) {
    let mut agents: Vec<&Value> = data.agents.values().collect();
    agents.sort_by_key(|a| a["id"].as_str().unwrap().to_string());
    for a in agents {
        let roles: Vec<&str> = a["roles"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if roles != ["Agent"] {
            continue;
        }
        let id = a["id"].as_str().unwrap();
        let mine: BTreeSet<String> = data
            .loans
            .iter()
            .filter(|l| {
                ["loanOfficerId", "loanAssistantId", "referringAgentId"]
                    .iter()
                    .any(|k| l[*k].as_str() == Some(id))
            })
            .map(|l| l["id"].as_str().unwrap().to_string())
            .collect();
        if mine.len() > 5 {
            return (a["email"].as_str().unwrap().to_string(), mine);
        }
    }
    panic!("the seed has no Agent with loans");
}

/// Every page of a list, one call per page: the rows in order.
async fn walk(app: &TestApp, token: &str, args: Value) -> Vec<Value> {
    let mut rows = Vec::new();
    let mut args = args;
    for _ in 0..1000 {
        let page = app.call_ok(token, "list_echo", args.clone()).await;
        rows.extend(page["rows"].as_array().unwrap().iter().cloned());
        match page["nextCursor"].as_str() {
            Some(c) => args["cursor"] = json!(c),
            None => return rows,
        }
    }
    panic!("the walk did not end in 1000 pages");
}

fn amount(v: &Value) -> Option<f64> {
    v.as_str().map(|s| s.parse().unwrap())
}

#[tokio::test]
async fn walking_every_page_lists_each_loan_of_the_callers_scope_once_in_order() {
    for postgres in [false, true] {
        // Arrange
        let app = listing_app(postgres, &loans_listed(), "", None).await;
        let data = seed_app(&app, 41, 400).await;
        let (agent, mine) = an_agent_with_loans(&data);
        let agent = app.token_for(&agent);
        let every: BTreeSet<String> = data
            .loans
            .iter()
            .map(|l| l["id"].as_str().unwrap().to_string())
            .collect();
        let list = |descending: bool, page: u32| json!({"fields": ["id", "loanAmount"], "orderBy": "amount", "descending": descending, "pageSize": page});

        for (token, scope) in [("admin-token", &every), (agent.as_str(), &mine)] {
            for (descending, page) in [(true, 37), (false, 100), (true, 1)] {
                if page == 1 && token == "admin-token" {
                    continue;
                }
                // Act
                let rows = walk(&app, token, list(descending, page)).await;

                // Assert: each loan of the scope once, amounts in order, nulls last.
                let ids: Vec<String> = rows
                    .iter()
                    .map(|r| r[0].as_str().unwrap().to_string())
                    .collect();
                let unique: BTreeSet<String> = ids.iter().cloned().collect();
                assert_eq!(unique.len(), ids.len(), "a loan listed twice");
                assert_eq!(&unique, scope, "postgres={postgres} desc={descending}");
                let amounts: Vec<Option<f64>> = rows.iter().map(|r| amount(&r[1])).collect();
                let first_null = amounts
                    .iter()
                    .position(Option::is_none)
                    .unwrap_or(amounts.len());
                assert!(
                    amounts[first_null..].iter().all(Option::is_none),
                    "nulls last"
                );
                for w in amounts[..first_null].windows(2) {
                    let (a, b) = (w[0].unwrap(), w[1].unwrap());
                    assert!(if descending { a >= b } else { a <= b }, "{a} then {b}");
                }
            }
        }
        // The same rows as JSON objects, several pages in one call.
        let objects = app
            .call_ok(
                "admin-token",
                "list_echo",
                json!({"fields": ["id", "loanAmount"], "orderBy": "amount", "descending": true, "pageSize": 37, "json": true, "pages": 2}),
            )
            .await;
        let arrays = app
            .call_ok(
                "admin-token",
                "list_echo",
                json!({"fields": ["id", "loanAmount"], "orderBy": "amount", "descending": true, "pageSize": 37, "pages": 2}),
            )
            .await;
        let as_arrays: Vec<Value> = objects["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| json!([o["id"], o["loanAmount"]]))
            .collect();
        assert_eq!(json!(as_arrays), arrays["rows"]);
        assert_eq!(arrays["rows"].as_array().unwrap().len(), 74);
    }
}

#[tokio::test]
async fn a_changed_foreign_or_other_lists_cursor_is_refused_and_an_import_ends_a_walk() {
    // Arrange
    let app = listing_app(false, &loans_listed(), "", None).await;
    let data = seed_app(&app, 42, 120).await;
    let (agent, _) = an_agent_with_loans(&data);
    let agent = app.token_for(&agent);
    let list = json!({"fields": ["id", "status"], "orderBy": "updated", "descending": true, "pageSize": 10});
    let first = app.call_ok("admin-token", "list_echo", list.clone()).await;
    let cursor = first["nextCursor"].as_str().unwrap().to_string();
    let with = |args: &Value, cursor: &str| {
        let mut a = args.clone();
        a["cursor"] = json!(cursor);
        a
    };
    let mut changed = cursor.clone().into_bytes();
    let at = changed.len() / 2;
    changed[at] = if changed[at] == b'A' { b'B' } else { b'A' };
    let changed = String::from_utf8(changed).unwrap();
    let other_list = json!({"fields": ["id", "loanAmount"], "orderBy": "updated", "descending": true, "pageSize": 10});

    // Act
    let tampered = app
        .call_err("admin-token", "list_echo", with(&list, &changed))
        .await;
    let foreign = app
        .call_err(&agent, "list_echo", with(&list, &cursor))
        .await;
    let other = app
        .call_err("admin-token", "list_echo", with(&other_list, &cursor))
        .await;
    let bigger_page = {
        let mut a = with(&list, &cursor);
        a["pageSize"] = json!(25);
        app.call_ok("admin-token", "list_echo", a).await
    };
    let loan = data.loans[0].clone();
    import_lines(&app, "loans.jsonl", &[loan.to_string()]).await;
    let stale = app
        .call_err("admin-token", "list_echo", with(&list, &cursor))
        .await;

    // Assert
    for refused in [&tampered, &foreign, &other] {
        assert!(
            refused.starts_with(
                "invalid_params: cursor: the cursor was not issued for this caller and this query"
            ),
            "{refused}"
        );
    }
    assert_eq!(bigger_page["rows"].as_array().unwrap().len(), 25);
    assert!(
        stale.starts_with("bad_request: cursor: the loans changed since this list's first page"),
        "{stale}"
    );
}

#[tokio::test]
async fn listing_needs_a_listing_grant_and_reads_only_granted_fields_the_caller_may_read() {
    // Arrange: loans granted for aggregates only (history for listing).
    let aggregate_only = "[datasets.loans]\nfields = [\"id\", \"loanAmount\", \"updated\"]\n\n[datasets.los-status-history]\nfields = [\"milestone\"]\nlisting = true";
    let app = listing_app(false, aggregate_only, "", None).await;
    let listed = listing_app(false, &loans_listed(), "", None).await;
    seed_app(&listed, 43, 60).await;
    let args = |fields: Value| json!({"fields": fields, "orderBy": "updated", "pageSize": 5});

    // Act
    let not_listed = app
        .call_err("admin-token", "list_echo", args(json!(["id"])))
        .await;
    let ungranted = listed
        .call_err("admin-token", "list_echo", args(json!(["id", "purpose"])))
        .await;
    let names = listed
        .call_err(
            "agent-token",
            "list_echo",
            args(json!(["id", "loanOfficerName"])),
        )
        .await;
    let warehouse = listed
        .call_err(
            "admin-token",
            "list_echo",
            json!({"dataset": "dw-deals", "fields": ["id"], "orderBy": "updated", "pageSize": 5}),
        )
        .await;
    let too_big = listed
        .call_err(
            "admin-token",
            "list_echo",
            json!({"fields": ["id"], "orderBy": "updated", "pageSize": 101}),
        )
        .await;

    // Assert
    assert!(
        not_listed.starts_with("forbidden: dataset `loans` is granted for aggregates only"),
        "{not_listed}"
    );
    assert!(
        ungranted.starts_with("forbidden: field `purpose` of dataset `loans` is not granted"),
        "{ungranted}"
    );
    assert!(
        names.starts_with("forbidden: field `loanOfficerName` is readable only by callers with Admin, Processor or ConciergeKey"),
        "{names}"
    );
    assert!(
        warehouse.starts_with("forbidden: dataset `dw-deals` is not granted"),
        "{warehouse}"
    );
    assert!(
        too_big.starts_with("invalid_params: a page holds 1 to 100 rows"),
        "{too_big}"
    );
}

#[tokio::test]
async fn listed_rows_count_against_the_calls_rows_and_the_audit_line_names_their_loans() {
    // Arrange
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let app = listing_app(
        false,
        &loans_listed(),
        "max_rows = 30\n",
        Some(&path.display().to_string()),
    )
    .await;
    seed_app(&app, 44, 100).await;
    let page = |pages: u32| json!({"fields": ["id"], "orderBy": "statusDate", "pageSize": 20, "pages": pages});

    // Act
    let one = app.call_ok("admin-token", "list_echo", page(1)).await;
    let two = app.call_err("admin-token", "list_echo", page(2)).await;

    // Assert
    assert!(two.contains("rows left in this call's budget"), "{two}");
    let lines: Vec<Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids: Vec<Value> = one["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[0].clone())
        .collect();
    assert_eq!(lines[0]["rowsListed"], 20, "{}", lines[0]);
    assert_eq!(lines[0]["loansListed"], json!(ids), "{}", lines[0]);
}
