//! `loan_pipeline_report`, `report_loan_milestones`, `warehouse_loan_milestone_report` and
//! `mlo_pipeline_report` over MCP on a hand-made data set (today is 2026-03-15, a Sunday of ISO
//! week 11); every expected row was worked out by hand from the lines below.

use serde_json::{json, Value};

use crate::helpers::{spawn_app_with, tool_manifest, tool_wasm, AppOptions, TestApp};

const O1: &str = "00000000-0000-4000-8000-0000000000f1";
const O2: &str = "00000000-0000-4000-8000-0000000000f2";
const C1: &str = "00000000-0000-4000-8000-0000000000c1";

fn id(n: u32) -> String {
    format!("00000000-0000-4000-8000-{n:012}")
}

async fn app() -> TestApp {
    let mut options = AppOptions::default();
    for t in [
        "loan_pipeline_report",
        "report_loan_milestones",
        "warehouse_loan_milestone_report",
        "mlo_pipeline_report",
    ] {
        options = options.plugin(t, tool_wasm(t), tool_manifest(t));
    }
    let app = spawn_app_with(options).await;
    let dir = tempfile::tempdir().unwrap();
    let write = |f: &str, lines: Vec<Value>| {
        std::fs::write(
            dir.path().join(f),
            lines
                .iter()
                .map(|l| l.to_string() + "\n")
                .collect::<String>(),
        )
        .unwrap()
    };
    write(
        "agents.jsonl",
        vec![
            json!({"id": O1, "email": "olivia@example.com", "companyId": C1, "roles": ["Agent"]}),
            json!({"id": O2, "email": "oscar@example.com", "companyId": C1, "roles": ["Agent"]}),
            json!({"id": id(900), "email": "pat@example.com", "companyId": C1, "roles": ["Processor"]}),
        ],
    );
    write(
        "loans.jsonl",
        vec![
            json!({"id": id(1), "loanOfficerId": O1, "status": "Loan Open", "loanAmount": 100000, "statusDate": "2026-03-02T10:00:00Z", "companyId": C1}),
            json!({"id": id(2), "loanOfficerId": O1, "status": "Loan Funded", "loanAmount": 200000, "statusDate": "2026-02-10T10:00:00Z", "companyId": C1}),
            json!({"id": id(3), "loanOfficerId": O2, "status": "Loan Sold", "loanAmount": null, "statusDate": "2026-01-20T10:00:00Z", "companyId": C1}),
            json!({"id": id(4), "loanOfficerId": O2, "status": "Loan Withdrawn", "loanAmount": 50000, "statusDate": "2025-12-15T10:00:00Z", "companyId": C1}),
            json!({"id": id(5), "loanOfficerId": O1, "status": "Loan Underwriting", "loanAmount": 300000, "companyId": C1}),
        ],
    );
    let h = |n: u32, s: &str, at: &str| json!({"loanId": id(n), "status": s, "occurredAt": at});
    write(
        "los_status_history.jsonl",
        vec![
            h(1, "Loan Open", "2026-03-03T09:00:00Z"),
            h(2, "Loan Open", "2026-01-05T09:00:00Z"),
            h(2, "Loan Preapproval", "2026-01-20T09:00:00Z"),
            h(2, "Rate Locked", "2026-02-02T09:00:00Z"),
            h(2, "Loan Closed", "2026-02-09T09:00:00Z"),
            h(2, "Loan Funded", "2026-02-10T09:00:00Z"),
            h(2, "Loan Open", "2026-02-15T09:00:00Z"),
            h(3, "Loan Open", "2025-11-20T09:00:00Z"),
            h(3, "Loan Funded", "2026-01-15T09:00:00Z"),
            h(3, "Loan Sold", "2026-01-20T09:00:00Z"),
            h(4, "Loan Open", "2026-02-20T09:00:00Z"),
            h(4, "Loan Withdrawn", "2026-03-01T09:00:00Z"),
        ],
    );
    let m =
        |loan: String, s: &str, at: &str| json!({"loanId": loan, "milestone": s, "occurredAt": at});
    write(
        "dw_loan_milestones.jsonl",
        vec![
            m(id(1), "Opened", "2026-03-03T09:00:00Z"),
            m(id(2), "Opened", "2026-01-05T09:00:00Z"),
            m(id(2), "Approved", "2026-02-01T09:00:00Z"),
            m(id(2), "Funded/Closed", "2026-02-10T09:00:00Z"),
            m(id(2), "Funded/Closed", "2026-02-11T09:00:00Z"),
            m(id(3), "Canceled", "2026-02-05T09:00:00Z"),
            m(id(77), "Mystery", "2026-02-06T09:00:00Z"),
        ],
    );
    let d = |n: &str, at: &str, stage: &str| json!({"id": n, "createdAt": at, "stage": stage});
    write(
        "dw_deals.jsonl",
        vec![
            d("d1", "2026-01-10T09:00:00Z", "1. Lead"),
            d("d2", "2026-01-20T09:00:00Z", "Fully Onboarded"),
            d("d3", "2026-02-01T09:00:00Z", "1. Lead"),
            d("d4", "2026-02-02T09:00:00Z", "Weird Stage"),
            d("d5", "2026-01-11T09:00:00Z", "1. Lead"),
        ],
    );
    loanhost::data::import::import_dir(&app.db, dir.path(), |_, _| {})
        .await
        .unwrap();
    app
}

#[tokio::test]
async fn pipeline_lists_every_stage_and_a_monthly_trend_ending_this_month() {
    // Arrange
    let app = app().await;

    // Act
    let r = app
        .call_ok("admin-token", "loan_pipeline_report", json!({}))
        .await;
    let agent = app
        .call_ok(
            &app.token_for("oscar@example.com"),
            "loan_pipeline_report",
            json!({"lookbackMonths": 0}),
        )
        .await;
    let long = app
        .call_ok(
            "admin-token",
            "loan_pipeline_report",
            json!({"lookbackMonths": 100}),
        )
        .await;

    // Assert
    let stages: Vec<(String, u64, bool, u64, Value)> = r["currentPipelineByStage"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["stage"].as_str().unwrap().into(),
                s["order"].as_u64().unwrap(),
                s["isTerminal"].as_bool().unwrap(),
                s["count"].as_u64().unwrap(),
                s["totalLoanAmount"].clone(),
            )
        })
        .collect();
    assert_eq!(
        stages,
        vec![
            ("Lead".into(), 1, false, 0, json!(0)),
            ("Application".into(), 2, false, 1, json!(100000)),
            ("Processing".into(), 3, false, 0, json!(0)),
            ("Underwriting".into(), 4, false, 1, json!(300000)),
            ("Approved".into(), 5, false, 0, json!(0)),
            ("Clear to Close".into(), 6, false, 0, json!(0)),
            ("Docs".into(), 7, false, 0, json!(0)),
            ("Funded".into(), 8, false, 1, json!(200000)),
            ("Post-Closing".into(), 9, true, 1, json!(0)),
            ("Inactive".into(), 10, true, 1, json!(50000)),
        ]
    );
    assert_eq!(
        r["currentPipelineByStage"][8]["statuses"]
            .as_array()
            .unwrap()
            .len(),
        12
    );
    assert_eq!(r["activeLoanCount"], 3);
    assert_eq!(
        r["monthlyTrend"],
        json!([
            {"period": "2026-01", "count": 1, "totalLoanAmount": 0},
            {"period": "2026-02", "count": 1, "totalLoanAmount": 200000},
            {"period": "2026-03", "count": 1, "totalLoanAmount": 100000}
        ])
    );
    assert!(r["note"]
        .as_str()
        .unwrap()
        .contains("report_loan_milestones"));
    // Oscar sees loans 3 (Sold) and 4 (Withdrawn): nothing active; lookback 0 becomes 3.
    assert_eq!(agent["activeLoanCount"], 0);
    assert_eq!(agent["monthlyTrend"].as_array().unwrap().len(), 3);
    assert_eq!(
        long["monthlyTrend"].as_array().unwrap().len(),
        36,
        "lookback above 36 becomes 36"
    );
    assert_eq!(long["monthlyTrend"][0]["period"], "2023-04");
}

fn slim(r: &Value) -> Vec<(String, String, u64, u64, Value)> {
    r["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["period"].as_str().unwrap().into(),
                b["stage"].as_str().unwrap().into(),
                b["stageOrder"].as_u64().unwrap(),
                b["loanCount"].as_u64().unwrap(),
                b["loanAmount"].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn milestones_count_distinct_loans_per_period_and_funnel_stage() {
    // Arrange
    let app = app().await;

    // Act: defaults are Month, 4 months ending 2026-03 (Dec..Mar), Northstar.
    let r = app
        .call_ok("admin-token", "report_loan_milestones", json!({}))
        .await;

    // Assert: loan 2 opens in January and again in February (counted in both); its Closed
    // and Funded crossings in February are one loan; loan 3 was funded then sold, and still
    // counts as funded in January; loan 3's opening in November is outside the window.
    assert_eq!(
        (
            r["granularity"].clone(),
            r["groupBy"].clone(),
            r["truncated"].clone()
        ),
        (json!("Month"), json!("Northstar"), json!(false))
    );
    assert_eq!(
        slim(&r),
        vec![
            ("2026-01".into(), "1. Opened".into(), 1, 1, json!(200000)),
            (
                "2026-01".into(),
                "2. Pre-Approved".into(),
                2,
                1,
                json!(200000)
            ),
            (
                "2026-01".into(),
                "5. Closed & Funded".into(),
                5,
                1,
                json!(0)
            ),
            ("2026-01".into(), "Other".into(), 6, 1, json!(0)),
            ("2026-02".into(), "1. Opened".into(), 1, 2, json!(250000)),
            (
                "2026-02".into(),
                "3. Rate Locked".into(),
                3,
                1,
                json!(200000)
            ),
            (
                "2026-02".into(),
                "5. Closed & Funded".into(),
                5,
                1,
                json!(200000)
            ),
            ("2026-03".into(), "1. Opened".into(), 1, 1, json!(100000)),
            ("2026-03".into(), "Other".into(), 6, 1, json!(50000)),
        ]
    );
}

#[tokio::test]
async fn milestone_options_weeks_raw_names_exclusions_and_fallbacks() {
    let app = app().await;
    // ISO weeks: this week (W11, from Monday 2026-03-09) and the one before (W10, from 03-02);
    // loan 4's withdrawal on Sunday 03-01 belongs to W09.
    let weeks = app
        .call_ok(
            "admin-token",
            "report_loan_milestones",
            json!({"granularity": "Week", "lookback": 2}),
        )
        .await;
    assert_eq!(
        slim(&weeks),
        vec![("2026-W10".into(), "1. Opened".into(), 1, 1, json!(100000))]
    );
    assert_eq!(weeks["granularity"], "Week");
    // Raw milestones of this month only, ordered by their position in the status list.
    let raw = app
        .call_ok(
            "admin-token",
            "report_loan_milestones",
            json!({"groupByNorthstar": false, "lookback": 1}),
        )
        .await;
    assert_eq!(raw["groupBy"], "Milestone");
    assert_eq!(
        slim(&raw),
        vec![
            ("2026-03".into(), "Loan Open".into(), 3, 1, json!(100000)),
            (
                "2026-03".into(),
                "Loan Withdrawn".into(),
                44,
                1,
                json!(50000)
            )
        ]
    );
    let raw_feb = app
        .call_ok(
            "admin-token",
            "report_loan_milestones",
            json!({"groupByNorthstar": false, "lookback": 2}),
        )
        .await;
    assert!(
        slim(&raw_feb).contains(&(
            "2026-02".into(),
            "Rate Locked".into(),
            999,
            1,
            json!(200000)
        )),
        "a raw name outside the status list is 999"
    );
    // Exclusions, an unknown granularity and a non-positive lookback.
    let excluded = app
        .call_ok(
            "admin-token",
            "report_loan_milestones",
            json!({"excludeStages": ["Other"], "granularity": "Fortnight", "lookback": -2}),
        )
        .await;
    assert_eq!(excluded["granularity"], "Month");
    assert_eq!(slim(&excluded).len(), 7);
    assert!(slim(&excluded).iter().all(|b| b.1 != "Other"));
    // An agent sees only their own loans (Olivia: loans 1, 2 and 5).
    let olivia = app
        .call_ok(
            &app.token_for("olivia@example.com"),
            "report_loan_milestones",
            json!({"excludeStages": ["Other"]}),
        )
        .await;
    let counted: u64 = slim(&olivia).iter().map(|b| b.3).sum();
    assert_eq!(counted, 6, "{olivia}");
    let bad = app
        .call_err(
            "admin-token",
            "report_loan_milestones",
            json!({"lookback": "four"}),
        )
        .await;
    assert!(bad.starts_with("invalid_params: "), "{bad}");
}

#[tokio::test]
async fn warehouse_milestones_in_an_inclusive_range() {
    let app = app().await;
    let r = app
        .call_ok(
            "admin-token",
            "warehouse_loan_milestone_report",
            json!({"fromDate": "2026-01-01", "toDate": "2026-02-28"}),
        )
        .await;
    assert_eq!(
        r,
        json!({
            "bucket": "Month", "fromDate": "2026-01-01", "toDate": "2026-02-28", "rowCount": 5,
            "rows": [
                {"period": "2026-01", "milestone": "Opened", "stage": "1. Opened", "stageOrder": 1, "loanCount": 1},
                {"period": "2026-02", "milestone": "Approved", "stage": "4. Approved", "stageOrder": 4, "loanCount": 1},
                {"period": "2026-02", "milestone": "Funded/Closed", "stage": "5. Closed & Funded", "stageOrder": 5, "loanCount": 1},
                {"period": "2026-02", "milestone": "Canceled", "stage": "Other", "stageOrder": 6, "loanCount": 1},
                {"period": "2026-02", "milestone": "Mystery", "stage": "Other", "stageOrder": 6, "loanCount": 1}
            ]
        })
    );
    let inclusive = app
        .call_ok(
            "admin-token",
            "warehouse_loan_milestone_report",
            json!({"fromDate": "2026-02-10", "toDate": "2026-02-10", "bucket": "Week"}),
        )
        .await;
    assert_eq!(
        inclusive["rows"],
        json!([{"period": "2026-W07", "milestone": "Funded/Closed", "stage": "5. Closed & Funded", "stageOrder": 5, "loanCount": 1}])
    );
    let backwards = app
        .call_err(
            "admin-token",
            "warehouse_loan_milestone_report",
            json!({"fromDate": "2026-02-10", "toDate": "2026-02-09"}),
        )
        .await;
    assert_eq!(
        backwards,
        "bad_request: toDate 2026-02-09 is before fromDate 2026-02-10"
    );
    let missing = app
        .call_err(
            "admin-token",
            "warehouse_loan_milestone_report",
            json!({"fromDate": "2026-02-10"}),
        )
        .await;
    assert_eq!(missing, "invalid_params: toDate is required (YYYY-MM-DD)");
    let bad_bucket = app
        .call_err(
            "admin-token",
            "warehouse_loan_milestone_report",
            json!({"fromDate": "2026-01-01", "toDate": "2026-01-02", "bucket": "Day"}),
        )
        .await;
    assert!(
        bad_bucket.starts_with(
            "invalid_params: bucket: unknown variant `Day`, expected `Month` or `Week`"
        ),
        "{bad_bucket}"
    );
    let agent = app
        .call_err(
            "agent-token",
            "warehouse_loan_milestone_report",
            json!({"fromDate": "2026-01-01", "toDate": "2026-01-02"}),
        )
        .await;
    assert!(agent.starts_with("forbidden: `warehouse_loan_milestone_report` requires one of the roles Admin, Processor, ConciergeKey"), "{agent}");
}

#[tokio::test]
async fn mlo_cohorts_by_creation_period_and_current_stage() {
    let app = app().await;
    let processor = app.token_for("pat@example.com");
    let r = app
        .call_ok(&processor, "mlo_pipeline_report", json!({}))
        .await;
    assert_eq!(
        r,
        json!({
            "bucket": "Month", "rowCount": 4,
            "rows": [
                {"period": "2026-01", "stage": "1. Lead", "displayOrder": 1, "isTerminal": false, "entryCount": 2},
                {"period": "2026-01", "stage": "Fully Onboarded", "displayOrder": 16, "isTerminal": true, "entryCount": 1},
                {"period": "2026-02", "stage": "1. Lead", "displayOrder": 1, "isTerminal": false, "entryCount": 1},
                {"period": "2026-02", "stage": "Weird Stage", "displayOrder": 999, "isTerminal": false, "entryCount": 1}
            ]
        })
    );
    let feb = app
        .call_ok(
            &processor,
            "mlo_pipeline_report",
            json!({"fromDate": "2026-02-01", "bucket": "Week"}),
        )
        .await;
    assert_eq!(
        feb["rows"],
        json!([
            {"period": "2026-W05", "stage": "1. Lead", "displayOrder": 1, "isTerminal": false, "entryCount": 1},
            {"period": "2026-W06", "stage": "Weird Stage", "displayOrder": 999, "isTerminal": false, "entryCount": 1}
        ])
    );
    let bad = app
        .call_err(
            &processor,
            "mlo_pipeline_report",
            json!({"fromDate": "2026-02-30"}),
        )
        .await;
    assert_eq!(
        bad,
        "invalid_params: fromDate: `2026-02-30` is not a date like 2026-01-31 (YYYY-MM-DD)"
    );
    let agent = app
        .call_err("agent-token", "mlo_pipeline_report", json!({}))
        .await;
    assert!(agent.starts_with("forbidden: "), "{agent}");
}
