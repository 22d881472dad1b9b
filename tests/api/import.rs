//! `loanhost import` semantics on a real database: exact line errors, all-or-nothing,
//! idempotent re-import, and imported agents usable at once.

use loanhost::data::import::{import_dir, ImportError};
use loanhost::data::Db;
use serde_json::json;

use serde_json::Value;

use crate::helpers::{
    fixture_wasm, manifest, spawn_app, spawn_app_with, AppOptions, TestApp, DEFAULT_ROLES,
};

const LOAN_ID: &str = "6f1c2d3e-0000-4000-8000-00000000000a";

fn write(dir: &std::path::Path, file: &str, lines: &[String]) {
    std::fs::write(dir.join(file), lines.join("\n") + "\n").unwrap();
}

fn good_files(dir: &std::path::Path) {
    write(dir, "agents.jsonl", &[json!({"id": "10000000-0000-4000-8000-000000000001", "email": "Imported.Officer@Example.com", "firstName": "Ima", "lastName": "Officer", "companyId": null, "roles": ["Agent"], "managedAgentIds": []}).to_string()]);
    write(
        dir,
        "loans.jsonl",
        &[
            json!({"id": LOAN_ID, "loanNumber": "LN1", "status": "Loan Open", "statusDate": "2026-03-01T10:00:00Z", "loanType": "FHA", "purpose": "Purchase", "loanAmount": 350000.25, "loanOfficerId": "10000000-0000-4000-8000-000000000001"}).to_string(),
            json!({"id": "6f1c2d3e-0000-4000-8000-00000000000b", "status": "Loan Funded", "loanAmount": "100.5", "estimatedClosingDate": null}).to_string(),
        ],
    );
    write(
        dir,
        "los_status_history.jsonl",
        &[
            json!({"loanId": LOAN_ID, "status": "Loan Open", "occurredAt": "2026-03-01T10:00:00Z"})
                .to_string(),
            json!({"loanId": LOAN_ID, "status": "Loan Open", "occurredAt": "2026-03-01T10:00:00Z"})
                .to_string(),
        ],
    );
}

/// Rows per table, on either engine (table names are the import's own datasets).
async fn counts(db: &Db) -> Vec<i64> {
    let mut out = Vec::new();
    for t in [
        "agents",
        "agent_roles",
        "loans",
        "los_status_history",
        "dw_loan_milestones",
        "dw_deals",
    ] {
        let sql = format!("SELECT COUNT(*) FROM {t}");
        out.push(
            match db {
                Db::Sqlite(p) => sqlx::query_scalar::<_, i64>(&sql).fetch_one(p).await,
                Db::Postgres(p) => sqlx::query_scalar::<_, i64>(&sql).fetch_one(p).await,
            }
            .unwrap(),
        );
    }
    out
}

/// An app on SQLite or PostgreSQL with the `query_echo` fixture, to read stored values back
/// through the same path the reports use.
async fn app_on(postgres: bool) -> TestApp {
    spawn_app_with(AppOptions {
        postgres,
        ..AppOptions::default().plugin(
            "query_echo",
            fixture_wasm("query-echo"),
            manifest(
                "query_echo",
                DEFAULT_ROLES,
                &["loans", "los-status-history"],
                64,
                10_000,
                1 << 20,
            ),
        )
    })
    .await
}

const LOAN_FIELDS: [&str; 20] = [
    "id",
    "loanNumber",
    "status",
    "statusDate",
    "loanType",
    "purpose",
    "estimatedClosingDate",
    "updated",
    "loanAmount",
    "lockedCompensation",
    "estimatedCompensation",
    "propertyState",
    "companyId",
    "loanOfficerId",
    "loanOfficerName",
    "loanAssistantId",
    "processorId",
    "processorName",
    "referringAgentId",
    "referringAgentName",
];

/// Every stored field of every loan, as `field -> value` objects ordered by id (read 7 fields
/// at a time: a query groups by at most 8 keys, the id being one).
async fn stored_loans(app: &TestApp) -> Vec<Value> {
    let mut by_id: std::collections::BTreeMap<String, serde_json::Map<String, Value>> =
        Default::default();
    for fields in LOAN_FIELDS[1..].chunks(7) {
        let group_by: Vec<Value> = std::iter::once("id")
            .chain(fields.iter().copied())
            .map(|f| json!({"field": f}))
            .collect();
        let r = app
            .call_ok(
                "admin-token",
                "query_echo",
                json!({"dataset": "loans", "groupBy": group_by, "aggregates": [["count", null]]}),
            )
            .await;
        for row in r["rows"].as_array().unwrap() {
            let id = row[0].as_str().unwrap().to_string();
            let o = by_id.entry(id.clone()).or_default();
            o.insert("id".into(), json!(id));
            for (i, f) in fields.iter().enumerate() {
                o.insert(f.to_string(), row[i + 1].clone());
            }
        }
    }
    by_id.into_values().map(Value::Object).collect()
}

/// Loans whose loan number, borrower names or email match `text` (the fields not readable as
/// such, stored for search).
async fn found(app: &TestApp, text: &str) -> Value {
    let r = app
        .call_ok(
            "admin-token",
            "query_echo",
            json!({"dataset": "loans", "filter": {"searchText": text}, "aggregates": [["count", null]]}),
        )
        .await;
    r["rows"][0][0].clone()
}

#[tokio::test]
async fn every_imported_value_is_stored_and_a_changed_row_replaces_the_old_one() {
    for postgres in [false, true] {
        // Arrange: one loan with every field set (in forms the importer normalizes), then
        // the same files with that loan changed and a field cleared.
        let app = app_on(postgres).await;
        let officer = "10000000-0000-4000-8000-000000000001";
        let first = tempfile::tempdir().unwrap();
        let loan = json!({
            "id": LOAN_ID.to_uppercase(), "loanNumber": "LN-77", "borrowerFirstName": "Ima",
            "borrowerLastName": "O'Brien", "borrowerEmail": "ima.obrien@example.com",
            "status": "Loan Open", "statusDate": "2026-03-01T10:00:00+02:00", "loanType": "FHA",
            "purpose": "Purchase", "estimatedClosingDate": "2026-04-15", "updated": "2026-03-02T09:30:00",
            "loanAmount": 350000.25, "lockedCompensation": "3500", "estimatedCompensation": "0.0001",
            "propertyState": "TX", "companyId": "20000000-0000-4000-8000-000000000002",
            "loanOfficerId": officer, "loanOfficerName": "Ima Officer",
            "loanAssistantId": "30000000-0000-4000-8000-000000000003",
            "processorId": "40000000-0000-4000-8000-000000000004", "processorName": "Pat Processor",
            "referringAgentId": "50000000-0000-4000-8000-000000000005", "referringAgentName": "Remy Referrer"
        });
        write(first.path(), "agents.jsonl", &[json!({"id": officer, "email": "Ima.Officer@Example.com", "firstName": "Ima", "lastName": "Officer", "companyId": null, "roles": ["Agent"], "managedAgentIds": []}).to_string()]);
        write(first.path(), "loans.jsonl", &[loan.to_string()]);
        let second = tempfile::tempdir().unwrap();
        let mut changed = loan.clone();
        changed["status"] = json!("Loan Approved");
        changed["loanAmount"] = json!("360000");
        changed["loanType"] = Value::Null;
        changed["borrowerLastName"] = json!("Smith");
        write(second.path(), "agents.jsonl", &[json!({"id": officer, "email": "ima.officer@example.com", "roles": ["Agent", "ConciergeKey"], "managedAgentIds": ["60000000-0000-4000-8000-000000000006"]}).to_string()]);
        write(second.path(), "loans.jsonl", &[changed.to_string()]);

        // Act
        import_dir(&app.db, first.path(), |_, _| {}).await.unwrap();
        let stored = stored_loans(&app).await;
        let (obrien, agent) = (
            found(&app, "o'brien").await,
            app.db
                .agent_by_email("IMA.OFFICER@example.com")
                .await
                .unwrap()
                .unwrap(),
        );
        import_dir(&app.db, second.path(), |_, _| {}).await.unwrap();
        let restored = stored_loans(&app).await;
        let (obrien_after, smith) = (found(&app, "o'brien").await, found(&app, "smith").await);
        let agent_after = app
            .db
            .agent_by_email("ima.officer@example.com")
            .await
            .unwrap()
            .unwrap();
        let managed = app.db.managed_agents(officer).await.unwrap();

        // Assert: UUIDs lower-cased, instants in UTC, decimals exact.
        let engine = if postgres { "postgres" } else { "sqlite" };
        let expected = json!({
            "id": LOAN_ID, "loanNumber": "LN-77", "status": "Loan Open",
            "statusDate": "2026-03-01T08:00:00Z", "loanType": "FHA", "purpose": "Purchase",
            "estimatedClosingDate": "2026-04-15T00:00:00Z", "updated": "2026-03-02T09:30:00Z",
            "loanAmount": "350000.25", "lockedCompensation": "3500", "estimatedCompensation": "0.0001",
            "propertyState": "TX", "companyId": "20000000-0000-4000-8000-000000000002",
            "loanOfficerId": officer, "loanOfficerName": "Ima Officer",
            "loanAssistantId": "30000000-0000-4000-8000-000000000003",
            "processorId": "40000000-0000-4000-8000-000000000004", "processorName": "Pat Processor",
            "referringAgentId": "50000000-0000-4000-8000-000000000005", "referringAgentName": "Remy Referrer"
        });
        assert_eq!(stored, vec![expected.clone()], "{engine}");
        assert_eq!(obrien, 1, "{engine}: the borrower's name is searchable");
        assert_eq!(
            (agent.id.as_str(), agent.roles.clone()),
            (officer, vec!["Agent".to_string()]),
            "{engine}"
        );
        let mut updated = expected;
        updated["status"] = json!("Loan Approved");
        updated["loanAmount"] = json!("360000");
        updated["loanType"] = Value::Null;
        assert_eq!(
            restored,
            vec![updated],
            "{engine}: the changed row replaced the old one"
        );
        assert_eq!(
            (obrien_after, smith),
            (json!(0), json!(1)),
            "{engine}: search text follows the change"
        );
        let mut roles = agent_after.roles.clone();
        roles.sort();
        assert_eq!(roles, vec!["Agent", "ConciergeKey"], "{engine}");
        assert_eq!(
            managed,
            vec!["60000000-0000-4000-8000-000000000006"],
            "{engine}"
        );
    }
}

#[tokio::test]
async fn a_good_import_is_idempotent_and_agents_can_sign_in() {
    // Arrange
    let app = spawn_app().await;
    let dir = tempfile::tempdir().unwrap();
    good_files(dir.path());
    let before = counts(&app.db).await;

    // Act
    let first = import_dir(&app.db, dir.path(), |_, _| {}).await.unwrap();
    let after_first = counts(&app.db).await;
    import_dir(&app.db, dir.path(), |_, _| {}).await.unwrap();
    let after_second = counts(&app.db).await;
    let token = app
        .key
        .mint(
            &format!("{}/dev-idp", app.base),
            "imported.officer@example.com",
            "https://loanhost.local/mcp",
            "",
            std::time::Duration::from_secs(60),
        )
        .unwrap();
    let call = app
        .client
        .post(format!("{}/mcp", app.base))
        .bearer_auth(token)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .send()
        .await
        .unwrap();

    // Assert
    assert_eq!(
        first.files,
        vec![
            ("agents.jsonl".to_string(), 1),
            ("loans.jsonl".to_string(), 2),
            ("los_status_history.jsonl".to_string(), 2)
        ]
    );
    assert_eq!(after_first[0] - before[0], 1);
    assert_eq!(after_first[2] - before[2], 2);
    assert_eq!(
        after_first[3] - before[3],
        1,
        "duplicate history rows dedupe"
    );
    assert_eq!(after_first, after_second, "re-import changes nothing");
    assert_eq!(call.status(), 200);
}

#[tokio::test]
async fn each_malformed_line_is_reported_exactly_and_nothing_is_kept() {
    for postgres in [false, true] {
        each_malformed_line_on(postgres).await;
    }
}

async fn each_malformed_line_on(postgres: bool) {
    // Arrange: the good files imported once, so a failing import has rows it could spoil.
    let app = app_on(postgres).await;
    let seeded = tempfile::tempdir().unwrap();
    good_files(seeded.path());
    import_dir(&app.db, seeded.path(), |_, _| {}).await.unwrap();
    let before = counts(&app.db).await;
    let stored_before = stored_loans(&app).await;
    let loan = |patch: serde_json::Value| {
        let mut l = json!({"id": LOAN_ID, "status": "Loan Open", "loanAmount": 1});
        for (k, v) in patch.as_object().unwrap() {
            l[k] = v.clone();
        }
        l.to_string()
    };
    let cases: Vec<(&str, String, String)> = vec![
        ("loans.jsonl", loan(json!({"id": "not-a-uuid"})), "loans.jsonl:2: id: `not-a-uuid` is not a UUID".into()),
        ("loans.jsonl", loan(json!({"statusDate": "2026-02-30T00:00:00Z"})), "loans.jsonl:2: statusDate: `2026-02-30T00:00:00Z` is not an ISO 8601 date-time".into()),
        ("loans.jsonl", loan(json!({"loanAmount": "12,000"})), "loans.jsonl:2: loanAmount: `12,000` is not a decimal number".into()),
        ("loans.jsonl", loan(json!({"status": "Closed"})), "loans.jsonl:2: status: unknown loan status `Closed`".into()),
        ("loans.jsonl", json!({"id": LOAN_ID}).to_string(), "loans.jsonl:2: missing field `status`".into()),
        ("loans.jsonl", loan(json!({"loanType": "Jumbo"})), "loans.jsonl:2: loanType: `Jumbo` is not one of Conventional, FHA, VA, USDA/Rural Housing, Other".into()),
        ("agents.jsonl", json!({"id": LOAN_ID, "email": "x@y", "roles": "Agent"}).to_string(), "agents.jsonl:2: roles: expected an array of strings, got \"Agent\"".into()),
        ("dw_deals.jsonl", json!({"id": "d1", "createdAt": "2026-01-01T00:00:00Z"}).to_string(), "dw_deals.jsonl:2: missing field `stage`".into()),
        ("los_status_history.jsonl", "{\"loanId\": ".to_string(), "los_status_history.jsonl:2: not valid JSON".into()),
    ];

    for (file, bad, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        good_files(dir.path());
        // Files read before the bad one bring new rows, which must not be kept either.
        let append = |f: &str, line: Value| {
            if f != file {
                let path = dir.path().join(f);
                let text = std::fs::read_to_string(&path).unwrap();
                std::fs::write(path, format!("{text}{line}\n")).unwrap();
            }
        };
        append(
            "agents.jsonl",
            json!({"id": "10000000-0000-4000-8000-00000000000e", "email": "extra@example.com", "roles": ["Agent"]}),
        );
        append(
            "loans.jsonl",
            json!({"id": "6f1c2d3e-0000-4000-8000-0000000000ee", "status": "Loan Open", "loanAmount": 7}),
        );
        // The bad line is line 2 of its file, after a good one.
        let good_first = match file {
            "loans.jsonl" => loan(json!({"id": "6f1c2d3e-0000-4000-8000-0000000000ff"})),
            "agents.jsonl" => {
                json!({"id": "10000000-0000-4000-8000-000000000009", "email": "a@b.c", "roles": []})
                    .to_string()
            }
            "dw_deals.jsonl" => {
                json!({"id": "d0", "createdAt": "2026-01-01T00:00:00Z", "stage": "1. Lead"})
                    .to_string()
            }
            _ => json!({"loanId": LOAN_ID, "status": "Loan Open", "occurredAt": "2026-01-01"})
                .to_string(),
        };
        write(dir.path(), file, &[good_first, bad]);

        // Act
        let e = import_dir(&app.db, dir.path(), |_, _| {})
            .await
            .unwrap_err();

        // Assert
        assert!(matches!(e, ImportError::Line { .. }), "{e}");
        assert!(
            e.to_string().starts_with(&expected),
            "{file}: got {e}, expected {expected}"
        );
        assert_eq!(
            counts(&app.db).await,
            before,
            "{expected}: the database must be unchanged (postgres: {postgres})"
        );
        assert_eq!(
            stored_loans(&app).await,
            stored_before,
            "{expected}: no stored value changed (postgres: {postgres})"
        );
    }
}

#[tokio::test]
async fn a_folder_without_import_files_is_refused() {
    let app = spawn_app().await;
    let dir = tempfile::tempdir().unwrap();
    let e = import_dir(&app.db, dir.path(), |_, _| {})
        .await
        .unwrap_err();
    assert!(e.to_string().ends_with("none of agents.jsonl, user_licenses.jsonl, pricing.jsonl, loans.jsonl, los_status_history.jsonl, dw_loan_milestones.jsonl, dw_deals.jsonl, loan_applications.jsonl is there"), "{e}");
}
