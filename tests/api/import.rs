//! `loanhost import` semantics on a real database: exact line errors, all-or-nothing,
//! idempotent re-import, and imported agents usable at once.

use loanhost::data::import::{import_dir, ImportError};
use loanhost::data::Db;
use serde_json::json;

use crate::helpers::spawn_app;

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

async fn counts(db: &Db) -> Vec<i64> {
    let Db::Sqlite(p) = db else {
        panic!("tests use SQLite")
    };
    let mut out = Vec::new();
    for t in [
        "agents",
        "agent_roles",
        "loans",
        "los_status_history",
        "dw_loan_milestones",
        "dw_deals",
    ] {
        out.push(
            sqlx::query_scalar::<_, i64>(&format!("SELECT COUNT(*) FROM {t}"))
                .fetch_one(p)
                .await
                .unwrap(),
        );
    }
    out
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
    // Arrange
    let app = spawn_app().await;
    let before = counts(&app.db).await;
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
            "{expected}: the database must be unchanged"
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
    assert!(e.to_string().ends_with("none of agents.jsonl, loans.jsonl, los_status_history.jsonl, dw_loan_milestones.jsonl, dw_deals.jsonl is there"), "{e}");
}
