//! `report_loans` over MCP on a hand-made data set small enough to check by hand (every
//! expected value below was worked out on paper), called as users with different roles.

use serde_json::{json, Value};

use crate::helpers::{spawn_app_with, tool_manifest, tool_wasm, AppOptions, TestApp};

const O1: &str = "00000000-0000-4000-8000-0000000000f1";
const O2: &str = "00000000-0000-4000-8000-0000000000f2";
const C1: &str = "00000000-0000-4000-8000-0000000000c1";
const C2: &str = "00000000-0000-4000-8000-0000000000c2";

fn loan(n: u32, fields: Value) -> String {
    let mut l = json!({"id": format!("00000000-0000-4000-8000-{n:012}"), "loanNumber": format!("LN{n}"), "companyId": C1});
    for (k, v) in fields.as_object().unwrap() {
        l[k] = v.clone();
    }
    l.to_string()
}

async fn app() -> TestApp {
    let app = spawn_app_with(AppOptions::default().plugin(
        "report_loans",
        tool_wasm("report_loans"),
        tool_manifest("report_loans"),
    ))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let agents = [
        json!({"id": O1, "email": "olivia@example.com", "firstName": "Olivia", "lastName": "One", "companyId": C1, "roles": ["Agent"]}),
        json!({"id": O2, "email": "oscar@example.com", "firstName": "Oscar", "lastName": "Two", "companyId": C1, "roles": ["Agent"]}),
        json!({"id": "00000000-0000-4000-8000-0000000000e1", "email": "pat@example.com", "companyId": C1, "roles": ["Processor"]}),
    ];
    std::fs::write(
        dir.path().join("agents.jsonl"),
        agents
            .iter()
            .map(|a| a.to_string() + "\n")
            .collect::<String>(),
    )
    .unwrap();
    let loans = [
        loan(
            1,
            json!({"loanOfficerId": O1, "loanOfficerName": "Olivia One", "status": "Loan Open", "loanType": "FHA", "purpose": "Purchase", "loanAmount": 100000.00, "lockedCompensation": 1000, "statusDate": "2026-01-10T09:00:00Z"}),
        ),
        loan(
            2,
            json!({"loanOfficerId": O1, "loanOfficerName": "Olivia One", "status": "Loan Open", "loanType": "VA", "purpose": "Refinance", "loanAmount": "200000.50", "statusDate": "2026-02-05T12:00:00Z"}),
        ),
        loan(
            3,
            json!({"loanOfficerId": O2, "loanOfficerName": "Oscar Two", "status": "Loan Funded", "loanType": "FHA", "loanAmount": null, "statusDate": "2026-02-20T12:00:00Z"}),
        ),
        loan(
            4,
            json!({"loanOfficerId": O2, "loanOfficerName": "Oscar Two", "status": "Loan Closed", "purpose": "Purchase", "loanAmount": 300000.25, "companyId": C2}),
        ),
        loan(
            5,
            json!({"status": "Loan Open", "loanType": "Conventional", "loanAmount": 50000, "statusDate": "2025-12-31T23:59:59Z", "referringAgentId": O1, "referringAgentName": "Olivia One"}),
        ),
    ];
    std::fs::write(dir.path().join("loans.jsonl"), loans.join("\n")).unwrap();
    loanhost::data::import::import_dir(&app.db, dir.path(), |_, _| {})
        .await
        .unwrap();
    app
}

#[tokio::test]
async fn defaults_give_one_total_with_every_aggregate() {
    // Arrange
    let app = app().await;

    // Act
    let r = app.call_ok("admin-token", "report_loans", json!({})).await;

    // Assert: 650000.75 over the 4 loans with an amount; average 162500.1875 -> 162500.19.
    assert_eq!(
        r,
        json!({
            "groupBy": "None", "metric": "LoanAmount", "function": "Count",
            "totalCount": 5, "bucketCount": 1, "truncated": false,
            "buckets": [{"key": "all", "keyId": null, "count": 5, "sum": 650000.75, "average": 162500.19, "min": 50000, "max": 300000.25, "value": 5}]
        })
    );
}

#[tokio::test]
async fn by_status_orders_by_count_then_key_and_omits_missing_aggregates() {
    // Arrange
    let app = app().await;

    // Act
    let r = app
        .call_ok(
            "admin-token",
            "report_loans",
            json!({"groupBy": "Status", "metric": "Sum"}),
        )
        .await;

    // Assert: 350000.5 / 3 = 116666.8333 -> 116666.83; Loan Funded has no amount.
    assert_eq!(
        r["buckets"],
        json!([
            {"key": "Loan Open", "keyId": null, "count": 3, "sum": 350000.5, "average": 116666.83, "min": 50000, "max": 200000.5, "value": 350000.5},
            {"key": "Loan Closed", "keyId": null, "count": 1, "sum": 300000.25, "average": 300000.25, "min": 300000.25, "max": 300000.25, "value": 300000.25},
            {"key": "Loan Funded", "keyId": null, "count": 1, "value": null}
        ])
    );
    assert_eq!(
        (
            r["groupBy"].clone(),
            r["function"].clone(),
            r["totalCount"].clone()
        ),
        (json!("Status"), json!("Sum"), json!(5))
    );
}

#[tokio::test]
async fn nulls_are_unknown_and_ties_sort_by_key() {
    let app = app().await;
    let r = app.call_ok("admin-token", "report_loans", json!({"groupBy": "LoanType", "metric": "Average", "metricField": "LockedCompensation"})).await;
    let keys: Vec<(String, u64, Value)> = r["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["key"].as_str().unwrap().to_string(),
                b["count"].as_u64().unwrap(),
                b["value"].clone(),
            )
        })
        .collect();
    assert_eq!(
        keys,
        vec![
            ("FHA".into(), 2, json!(1000)),
            ("Conventional".into(), 1, Value::Null),
            ("Unknown".into(), 1, Value::Null),
            ("VA".into(), 1, Value::Null)
        ]
    );
    assert_eq!(r["metric"], "LockedCompensation");
}

#[tokio::test]
async fn officers_by_name_for_admins_and_by_id_for_agents() {
    // Arrange
    let app = app().await;

    // Act
    let admin = app
        .call_ok(
            "admin-token",
            "report_loans",
            json!({"groupBy": "LoanOfficer"}),
        )
        .await;
    let agent = app
        .call_ok(
            &app.token_for("olivia@example.com"),
            "report_loans",
            json!({"groupBy": "LoanOfficer"}),
        )
        .await;
    let processor = app
        .call_ok(
            &app.token_for("pat@example.com"),
            "report_loans",
            json!({"groupBy": "ReferringAgent"}),
        )
        .await;

    // Assert
    let slim = |r: &Value| -> Vec<(String, Value, u64)> {
        r["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                (
                    b["key"].as_str().unwrap().to_string(),
                    b["keyId"].clone(),
                    b["count"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    assert_eq!(
        slim(&admin),
        vec![
            ("Olivia One".into(), json!(O1), 2),
            ("Oscar Two".into(), json!(O2), 2),
            ("Unassigned".into(), Value::Null, 1)
        ]
    );
    // Olivia originates loans 1-2 and referred loan 5; she may not read names.
    assert_eq!(
        slim(&agent),
        vec![
            (O1.into(), json!(O1), 2),
            ("Unassigned".into(), Value::Null, 1)
        ]
    );
    assert_eq!(agent["totalCount"], 3);
    // The processor sees company C1 only (loan 4 is C2's): loans 1, 2, 3, 5.
    assert_eq!(processor["totalCount"], 4);
    assert_eq!(
        slim(&processor),
        vec![
            ("Unassigned".into(), Value::Null, 3),
            ("Olivia One".into(), json!(O1), 1)
        ]
    );
}

#[tokio::test]
async fn time_buckets_drop_loans_without_the_date_and_sort_by_period() {
    let app = app().await;
    let month = app
        .call_ok("admin-token", "report_loans", json!({"groupBy": "Month"}))
        .await;
    let quarter = app
        .call_ok("admin-token", "report_loans", json!({"groupBy": "Quarter"}))
        .await;
    let year = app
        .call_ok(
            "admin-token",
            "report_loans",
            json!({"groupBy": "Year", "dateField": "ClosingDate"}),
        )
        .await;
    let keys = |r: &Value| -> Vec<(String, u64)> {
        r["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                (
                    b["key"].as_str().unwrap().to_string(),
                    b["count"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    assert_eq!(
        keys(&month),
        vec![
            ("2025-12".into(), 1),
            ("2026-01".into(), 1),
            ("2026-02".into(), 2)
        ]
    );
    assert_eq!(month["totalCount"], 4, "loan 4 has no status date");
    assert_eq!(
        keys(&quarter),
        vec![("2025-Q4".into(), 1), ("2026-Q1".into(), 3)]
    );
    assert_eq!(
        (year["totalCount"].clone(), year["bucketCount"].clone()),
        (json!(0), json!(0)),
        "no closing dates at all"
    );
}

#[tokio::test]
async fn filter_and_argument_errors() {
    let app = app().await;
    let open = app
        .call_ok(
            "admin-token",
            "report_loans",
            json!({"filter": {"statuses": ["Loan Open"], "loanAmountMin": 60000}}),
        )
        .await;
    assert_eq!(open["totalCount"], 2);
    let bad = app
        .call_err("admin-token", "report_loans", json!({"groupBy": "Officer"}))
        .await;
    assert!(
        bad.starts_with(
            "invalid_params: groupBy: unknown variant `Officer`, expected one of `None`, `Status`"
        ),
        "{bad}"
    );
    let bad = app
        .call_err(
            "admin-token",
            "report_loans",
            json!({"filter": {"status": "Loan Open"}}),
        )
        .await;
    assert!(
        bad.starts_with("invalid_params: filter: unknown field `status`"),
        "{bad}"
    );
    let bad = app
        .call_err("admin-token", "report_loans", json!({"userId": O1}))
        .await;
    assert!(
        bad.starts_with("invalid_params: unknown field `userId`"),
        "{bad}"
    );
}

#[tokio::test]
async fn more_than_100_buckets_are_truncated_but_counted() {
    // Arrange: 103 officers with a loan each, officer 7 with two more and officer 50 with one
    // more; two loans without an officer, under two names (two groups for a caller who reads
    // names, one "Unassigned" bucket in the answer); officer 60's loan without a name and
    // three more under an empty name, a blank one and the officer's id (four groups, one
    // bucket keyed by the id).
    let app = spawn_app_with(AppOptions::default().plugin(
        "report_loans",
        tool_wasm("report_loans"),
        tool_manifest("report_loans"),
    ))
    .await;
    let officer = |n: u32| format!("10000000-0000-4000-8000-{n:012}");
    let mut loans: Vec<String> = (1..=103)
        .map(|n| {
            loan(
                n,
                json!({"status": "Loan Open", "loanOfficerId": officer(n)}),
            )
        })
        .collect();
    for (n, o) in [(104, 7), (105, 7), (106, 50)] {
        loans.push(loan(
            n,
            json!({"status": "Loan Open", "loanOfficerId": officer(o)}),
        ));
    }
    for (n, name) in [(107, "Nobody A"), (108, "Nobody B")] {
        loans.push(loan(
            n,
            json!({"status": "Loan Open", "loanOfficerName": name}),
        ));
    }
    for (n, name) in [(109, String::new()), (110, "  ".into()), (111, officer(60))] {
        loans.push(loan(
            n,
            json!({"status": "Loan Open", "loanOfficerId": officer(60), "loanOfficerName": name}),
        ));
    }
    crate::helpers::import_lines(&app, "loans.jsonl", &loans).await;

    // Act
    let r = app
        .call_ok(
            "admin-token",
            "report_loans",
            json!({"groupBy": "LoanOfficer"}),
        )
        .await;

    // Assert: 104 buckets, the first 100 by count, then key, then keyId.
    assert_eq!(
        (
            r["truncated"].clone(),
            r["bucketCount"].clone(),
            r["totalCount"].clone()
        ),
        (json!(true), json!(100), json!(111))
    );
    let got: Vec<(String, u64)> = r["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["key"].as_str().unwrap().to_string(),
                b["count"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut want = vec![
        (officer(60), 4),
        (officer(7), 3),
        (officer(50), 2),
        ("Unassigned".to_string(), 2),
    ];
    want.extend(
        (1..=103)
            .filter(|n| ![7, 50, 60].contains(n))
            .map(|n| (officer(n), 1))
            .take(96),
    );
    assert_eq!(got, want);
}
