//! A test application's data: seeded loans on a fixed "today", the milestones fixture, and
//! import files written and imported.

use serde_json::Value;

use super::{spawn_app_with, tool_manifest, tool_wasm, AppOptions, TestApp};

/// The fixed "today" of test servers.
pub const TODAY: &str = "2026-03-15";

/// A seeded data set as the test sees it: the lines of the import files (agents by id, the last
/// line of an id winning, as in import).
pub struct SeededData {
    pub agents: std::collections::HashMap<String, Value>,
    pub loans: Vec<Value>,
    pub history: Vec<Value>,
    pub milestones: Vec<Value>,
    pub deals: Vec<Value>,
    pub licenses: Vec<Value>,
    pub rates: Vec<Value>,
    pub applications: Vec<Value>,
}

/// Seeds `loans` synthetic loans (seed `seed`, today = [`TODAY`]) into the app's database
/// through the importer, and returns the files' contents for the test's own oracle.
pub async fn seed_app(app: &TestApp, seed: u64, loans: u64) -> SeededData {
    seed_app_on(app, seed, loans, TODAY).await
}

/// As [`seed_app`], generating back from `today` (the app's `LOANHOST_TODAY` should match).
pub async fn seed_app_on(app: &TestApp, seed: u64, loans: u64, today: &str) -> SeededData {
    let dir = tempfile::tempdir().unwrap();
    let today = loanhost::config::parse_date(today).unwrap();
    loanhost::data::seed::write_dir(
        loanhost::data::seed::SeedSpec { loans, seed, today },
        dir.path(),
    )
    .unwrap();
    loanhost::data::import::import_dir(&app.db, dir.path(), |_, _| {})
        .await
        .unwrap();
    let read = |f: &str| -> Vec<Value> {
        std::fs::read_to_string(dir.path().join(f))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    SeededData {
        agents: read("agents.jsonl")
            .into_iter()
            .map(|a| (a["id"].as_str().unwrap().to_string(), a))
            .collect(),
        loans: read("loans.jsonl"),
        history: read("los_status_history.jsonl"),
        milestones: read("dw_loan_milestones.jsonl"),
        deals: read("dw_deals.jsonl"),
        licenses: read("user_licenses.jsonl"),
        rates: read("pricing.jsonl"),
        applications: read("loan_applications.jsonl"),
    }
}

/// An app serving the shipped `report_loan_milestones` on SQLite or PostgreSQL.
pub async fn milestones_app(postgres: bool) -> TestApp {
    spawn_app_with(AppOptions {
        postgres,
        ..AppOptions::default().plugin(
            "report_loan_milestones",
            tool_wasm("report_loan_milestones"),
            tool_manifest("report_loan_milestones"),
        )
    })
    .await
}

/// The buckets of a caller's `report_loan_milestones` over `args`, with their loans counted.
pub async fn milestone_buckets(app: &TestApp, token: &str, args: Value) -> (u64, Vec<Value>) {
    let r = app.call_ok(token, "report_loan_milestones", args).await;
    let buckets = r["buckets"].as_array().unwrap().clone();
    let count = buckets
        .iter()
        .map(|b| b["loanCount"].as_u64().unwrap())
        .sum();
    (count, buckets)
}

/// Imports one JSON Lines file of `lines` (e.g. `loans.jsonl`) into the app's database.
pub async fn import_lines(app: &TestApp, file: &str, lines: &[String]) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(file), lines.join("\n")).unwrap();
    loanhost::data::import::import_dir(&app.db, dir.path(), |_, _| {})
        .await
        .unwrap();
}
