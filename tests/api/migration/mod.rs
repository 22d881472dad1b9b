//! Every schema from v3 on converts an existing v2 database in place (nothing re-imported): a
//! database built at v2 holding a seeded data set, opened by this version, holds the same data
//! as a fresh import of the same files (v4's period keys, status bits and period sets included) and gives
//! the same answers to the reports' queries, on SQLite and PostgreSQL.

mod v2;

use loanhost::data::query::{self, Allowance};
use loanhost::data::{Db, ReportStore};

use crate::helpers::fresh_postgres_database;
use v2::{contents, queries, v2_copy_of};

async fn a_v2_database_is_converted_in_place(postgres: bool) {
    // Arrange: a v3 database with a seeded data set, and a v2 database holding the same data.
    let dir = tempfile::tempdir().unwrap();
    let (new_url, old_url) = if postgres {
        (
            fresh_postgres_database().await,
            fresh_postgres_database().await,
        )
    } else {
        (
            format!("sqlite://{}", dir.path().join("new.db").display()),
            format!("sqlite://{}", dir.path().join("old.db").display()),
        )
    };
    let seed = dir.path().join("seed");
    loanhost::data::seed::write_dir(
        loanhost::data::seed::SeedSpec {
            loans: 400,
            seed: 11,
            today: loanhost::config::parse_date("2026-03-15").unwrap(),
        },
        &seed,
    )
    .unwrap();
    // Instants on the edges of months and weeks (one before 1970), statuses outside the
    // spec's list: the migration's SQL must place them as the import does.
    let edges = dir.path().join("edges");
    std::fs::create_dir(&edges).unwrap();
    let loan: String = std::fs::read_to_string(seed.join("loans.jsonl"))
        .unwrap()
        .lines()
        .next()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .unwrap();
    let edge_rows: Vec<String> = [
        ("Loan Open", "2026-02-28T23:59:59.999Z"),
        ("Rate Locked", "2026-03-01T00:00:00Z"),
        ("Submitted to investor", "2026-03-08T23:59:59.999Z"),
        ("Submitted to investor", "2026-03-09T00:00:00Z"),
        ("Loan Funded", "1969-12-31T23:59:59.999Z"),
        ("Loan Funded", "1969-12-28T12:00:00Z"),
        ("Loan Archived", "2027-01-03T23:59:59.999Z"),
    ]
    .iter()
    .map(|(status, at)| {
        serde_json::json!({"loanId": loan, "status": status, "occurredAt": at}).to_string()
    })
    .collect();
    std::fs::write(edges.join("los_status_history.jsonl"), edge_rows.join("\n")).unwrap();
    // Loans with dates on month edges (one before 1970) and without some.
    let template: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(seed.join("loans.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let edge_loans: Vec<String> = [
        ("1969-12-31T23:59:59.999Z", None, "2026-02-28T23:59:59.999Z"),
        (
            "1970-01-01T00:00:00Z",
            Some("2026-03-01T00:00:00Z"),
            "2026-12-31T23:59:59Z",
        ),
    ]
    .iter()
    .enumerate()
    .map(|(i, (status_date, closing, updated))| {
        let mut loan = template.clone();
        loan["id"] = serde_json::json!(format!("ed9e0000-0000-4000-8000-{i:012}"));
        loan["statusDate"] = serde_json::json!(status_date);
        loan["estimatedClosingDate"] = serde_json::json!(closing);
        loan["updated"] = serde_json::json!(updated);
        loan.to_string()
    })
    .collect();
    std::fs::write(edges.join("loans.jsonl"), edge_loans.join("\n")).unwrap();
    let fresh = Db::open(&new_url).await.unwrap();
    for dir in [&seed, &edges] {
        loanhost::data::import::import_dir(&fresh, dir, |_, _| {})
            .await
            .unwrap();
    }
    let old = v2_copy_of(&fresh, &old_url).await;
    drop(old);

    // Act: this version opens the v2 database.
    let migrated = Db::open(&old_url).await.unwrap();

    // Assert: the same data, the same answers.
    assert_eq!(contents(&migrated).await, contents(&fresh).await);
    // The company of the scope above: the seed's first loan's.
    let company: String = match &fresh {
        Db::Sqlite(p) => {
            sqlx::query_scalar("SELECT company_id FROM loans WHERE company_id IS NOT NULL LIMIT 1")
                .fetch_one(p)
                .await
                .unwrap()
        }
        Db::Postgres(p) => {
            sqlx::query_scalar("SELECT company_id FROM loans WHERE company_id IS NOT NULL LIMIT 1")
                .fetch_one(p)
                .await
                .unwrap()
        }
    };
    let (migrated, fresh) = (ReportStore::of(&migrated), ReportStore::of(&fresh));
    for (q, mut scope) in queries() {
        if scope.company.is_some() {
            scope.company = Some(company.clone());
        }
        let a = query::run(&migrated, &q, Some(&scope), true, Allowance::standard())
            .await
            .unwrap();
        let b = query::run(&fresh, &q, Some(&scope), true, Allowance::standard())
            .await
            .unwrap();
        assert!(!b.rows.is_empty(), "{q:?} answers something");
        assert_eq!(a.rows, b.rows, "{q:?}");
    }
}

#[tokio::test]
async fn a_sqlite_v2_database_is_converted_in_place() {
    a_v2_database_is_converted_in_place(false).await;
}

#[tokio::test]
async fn a_postgres_v2_database_is_converted_in_place() {
    a_v2_database_is_converted_in_place(true).await;
}

/// Loan count and amount of an Admin's milestone report (two months ending with TODAY).
async fn admin_milestones(app: &crate::helpers::TestApp) -> (u64, String) {
    let (count, buckets) =
        crate::helpers::milestone_buckets(app, "admin-token", serde_json::json!({"lookback": 2}))
            .await;
    let amounts: Vec<String> = buckets
        .iter()
        .map(|b| b["loanAmount"].to_string())
        .collect();
    (count, amounts.join(","))
}

async fn history_rows_carry_their_loan_in_step(postgres: bool) {
    use crate::helpers::{import_lines, milestones_app};
    use serde_json::json;
    // Arrange: LOS history for a loan the snapshot does not have yet.
    let app = milestones_app(postgres).await;
    let id = "00000000-0000-4000-8000-00000000a001";
    import_lines(
        &app,
        "los_status_history.jsonl",
        &[
            json!({"loanId": id, "status": "Loan Open", "occurredAt": "2026-03-02T10:00:00Z"})
                .to_string(),
        ],
    )
    .await;
    let loan =
        |amount: &str| json!({"id": id, "status": "Loan Open", "loanAmount": amount}).to_string();

    // Act
    let before = admin_milestones(&app).await;
    import_lines(&app, "loans.jsonl", &[loan("100")]).await;
    let synced = admin_milestones(&app).await;
    import_lines(&app, "loans.jsonl", &[loan("250.5")]).await;
    let changed = admin_milestones(&app).await;
    // More history for the loan in the same month and week, imported twice: the loan's period
    // sets gain the status and keep the one they had.
    let funded =
        json!({"loanId": id, "status": "Loan Funded", "occurredAt": "2026-03-03T09:00:00Z"})
            .to_string();
    import_lines(
        &app,
        "los_status_history.jsonl",
        std::slice::from_ref(&funded),
    )
    .await;
    import_lines(&app, "los_status_history.jsonl", &[funded]).await;
    let more = admin_milestones(&app).await;

    // Assert: only loans in the snapshot count, with their current amount.
    assert_eq!(
        before.0, 0,
        "a loan missing from the snapshot does not count: {before:?}"
    );
    assert_eq!(synced, (1, "100".to_string()));
    assert_eq!(changed, (1, "250.5".to_string()));
    assert_eq!(
        more,
        (2, "250.5,250.5".to_string()),
        "opened and closed & funded in March"
    );
}

#[tokio::test]
async fn sqlite_history_rows_carry_their_loan_in_step() {
    history_rows_carry_their_loan_in_step(false).await;
}

#[tokio::test]
async fn postgres_history_rows_carry_their_loan_in_step() {
    history_rows_carry_their_loan_in_step(true).await;
}
