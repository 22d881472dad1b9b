//! Differential tests on seeded data: every report, for callers of every role, equals a
//! straightforward implementation written here (sharing no code with the plugins or the
//! host's query compiler; the scope is the oracle of `data.rs`).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{json, Value};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::data::{scaled, visible};
use crate::helpers::{seed_app, spawn_app_with, tool_manifest, tool_wasm, AppOptions, TestApp};

const TOOLS: [&str; 5] = [
    "report_loans",
    "loan_pipeline_report",
    "report_loan_milestones",
    "warehouse_loan_milestone_report",
    "mlo_pipeline_report",
];

struct Seeded {
    app: TestApp,
    agents: HashMap<String, Value>,
    loans: Vec<Value>,
    history: Vec<Value>,
    milestones: Vec<Value>,
    deals: Vec<Value>,
}

async fn seeded(seed: u64) -> Seeded {
    let mut options = AppOptions::default();
    for t in TOOLS {
        options = options.plugin(t, tool_wasm(t), tool_manifest(t));
    }
    let app = spawn_app_with(options).await;
    let data = seed_app(&app, seed, 500).await;
    Seeded {
        app,
        agents: data.agents,
        loans: data.loans,
        history: data.history,
        milestones: data.milestones,
        deals: data.deals,
    }
}

fn at(s: &str) -> OffsetDateTime {
    OffsetDateTime::parse(s, &Rfc3339).unwrap()
}

fn month(t: OffsetDateTime) -> String {
    format!("{:04}-{:02}", t.year(), u8::from(t.month()))
}

fn iso_week(t: OffsetDateTime) -> String {
    let (y, w, _) = t.date().to_iso_week_date();
    format!("{y:04}-W{w:02}")
}

fn money(v: i128) -> Value {
    let text = if v % 10_000 == 0 {
        (v / 10_000).to_string()
    } else {
        format!("{}.{:04}", v / 10_000, v % 10_000)
            .trim_end_matches('0')
            .to_string()
    };
    serde_json::from_str(&text).unwrap()
}

/// Callers of every role: the demo users plus a dual-licensed officer and a concierge.
fn callers(s: &Seeded) -> Vec<Value> {
    let mut out: Vec<Value> = ["admin", "processor", "concierge", "agent", "prelicensed"]
        .iter()
        .map(|u| {
            s.agents
                .values()
                .find(|a| a["email"] == format!("{u}@demo.loanhost.local"))
                .unwrap()
                .clone()
        })
        .collect();
    out.extend(
        s.agents
            .values()
            .find(|a| a["roles"][0] == "DualLicensedAgent")
            .cloned(),
    );
    out.extend(
        s.agents
            .values()
            .find(|a| {
                a["roles"][0] == "ConciergeKey"
                    && !a["email"].as_str().unwrap().starts_with("concierge@")
            })
            .cloned(),
    );
    out
}

fn mine<'a>(s: &'a Seeded, caller: &Value) -> Vec<&'a Value> {
    s.loans
        .iter()
        .filter(|l| visible(caller, &s.agents, l))
        .collect()
}

/// report_loans grouped by status, metric Average: key, count, sum, average, min, max, value.
fn expected_report_loans(loans: &[&Value]) -> Value {
    let mut groups: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for l in loans {
        groups
            .entry(l["status"].as_str().unwrap().to_string())
            .or_default()
            .push(l);
    }
    let mut buckets: Vec<(String, Vec<&Value>)> = groups.into_iter().collect();
    buckets.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
    let out: Vec<Value> = buckets
        .iter()
        .map(|(key, ls)| {
            let amounts: Vec<i128> = ls.iter().filter_map(|l| scaled(&l["loanAmount"])).collect();
            let mut b = json!({"key": key, "keyId": null, "count": ls.len()});
            if amounts.is_empty() {
                b["value"] = Value::Null;
            } else {
                let sum: i128 = amounts.iter().sum();
                let n = amounts.len() as i128;
                let cents = (sum * 2 / (n * 100) + if sum >= 0 { 1 } else { -1 }) / 2; // half away from zero
                let avg = money(cents * 100);
                b["sum"] = money(sum);
                b["average"] = avg.clone();
                b["min"] = money(*amounts.iter().min().unwrap());
                b["max"] = money(*amounts.iter().max().unwrap());
                b["value"] = avg;
            }
            b
        })
        .collect();
    json!({"groupBy": "Status", "metric": "LoanAmount", "function": "Average", "totalCount": loans.len(), "bucketCount": out.len(), "truncated": false, "buckets": out})
}

/// The macro stage of a status (DESIGN.md §7.2), written out independently.
fn macro_stage(status: &str) -> &'static str {
    match status {
        "App Started" | "Loan Officer Review" | "Loan Prequal" | "Loan Other" => "Lead",
        "Loan Open" | "Loan Preapproval" | "Loan Counter Offer" => "Application",
        "Loan Submitted"
        | "Loan Pre-Processing"
        | "Loan Processing"
        | "Loan Document Check"
        | "Loan Document Check Failed"
        | "Loan On Hold"
        | "Loan Suspended" => "Processing",
        "Loan Pre-Underwriting"
        | "Loan Underwriting"
        | "Loan Condition Review"
        | "Loan Final Underwriting" => "Underwriting",
        "Loan Approved" => "Approved",
        "Loan Clear To Close" | "Loan Pre-Doc QC" => "Clear to Close",
        "Loan Docs Ordered"
        | "Loan Docs Drawn"
        | "Loan Docs"
        | "Loan Docs Back"
        | "Loan Final Docs"
        | "Loan Funding Conditions"
        | "Loan Closed" => "Docs",
        "Loan Funded" | "Loan Recorded" => "Funded",
        "Loan Canceled" | "Loan Denied" | "Loan Withdrawn" => "Inactive",
        _ => "Post-Closing",
    }
}

fn northstar(raw: &str) -> &'static str {
    match raw {
        "Loan Open" => "1. Opened",
        "Loan Preapproval" => "2. Pre-Approved",
        "Rate Locked" => "3. Rate Locked",
        "Loan Approved" | "Loan Clear To Close" => "4. Approved",
        "Loan Closed" | "Loan Funded" => "5. Closed & Funded",
        _ => "Other",
    }
}

#[tokio::test]
async fn every_report_for_every_role_equals_an_independent_implementation() {
    // Arrange
    let s = seeded(31).await;
    let by_id: HashMap<&str, &Value> = s
        .loans
        .iter()
        .map(|l| (l["id"].as_str().unwrap(), l))
        .collect();

    let (mut milestone_rows, mut warehouse_rows, mut deal_rows) = (0, 0, 0);
    for caller in callers(&s) {
        let t = s.app.token_for(caller["email"].as_str().unwrap());
        let loans = mine(&s, &caller);
        let who = format!("{} {}", caller["email"], caller["roles"]);

        // report_loans
        let got = s
            .app
            .call_ok(
                &t,
                "report_loans",
                json!({"groupBy": "Status", "metric": "Average"}),
            )
            .await;
        assert_eq!(got, expected_report_loans(&loans), "report_loans for {who}");

        // loan_pipeline_report: stage counts and the 3-month trend.
        let got = s.app.call_ok(&t, "loan_pipeline_report", json!({})).await;
        let mut stage_counts: BTreeMap<&str, (u64, i128)> = BTreeMap::new();
        for l in &loans {
            let e = stage_counts
                .entry(macro_stage(l["status"].as_str().unwrap()))
                .or_default();
            e.0 += 1;
            e.1 += scaled(&l["loanAmount"]).unwrap_or(0);
        }
        for row in got["currentPipelineByStage"].as_array().unwrap() {
            let (c, a) = stage_counts
                .get(row["stage"].as_str().unwrap())
                .copied()
                .unwrap_or((0, 0));
            assert_eq!(
                (
                    row["count"].as_u64().unwrap(),
                    row["totalLoanAmount"].clone()
                ),
                (c, money(a)),
                "pipeline {} for {who}",
                row["stage"]
            );
        }
        let active: u64 = stage_counts
            .iter()
            .filter(|(k, _)| !["Post-Closing", "Inactive"].contains(k))
            .map(|(_, v)| v.0)
            .sum();
        assert_eq!(got["activeLoanCount"], active, "active loans for {who}");
        let window = ["2026-01", "2026-02", "2026-03"];
        for (i, m) in window.iter().enumerate() {
            let in_month: Vec<&&Value> = loans
                .iter()
                .filter(|l| l["statusDate"].as_str().is_some_and(|d| month(at(d)) == *m))
                .collect();
            let amount: i128 = in_month
                .iter()
                .filter_map(|l| scaled(&l["loanAmount"]))
                .sum();
            assert_eq!(
                got["monthlyTrend"][i],
                json!({"period": m, "count": in_month.len(), "totalLoanAmount": money(amount)}),
                "trend {m} for {who}"
            );
        }

        // report_loan_milestones: weeks, 6 back, distinct loans per (week, stage).
        let got = s
            .app
            .call_ok(
                &t,
                "report_loan_milestones",
                json!({"granularity": "Week", "lookback": 6}),
            )
            .await;
        let start = at("2026-02-02T00:00:00Z"); // Monday of the week 5 weeks before ISO week 11 of 2026
        let end = at("2026-03-16T00:00:00Z");
        let visible_ids: BTreeSet<&str> = loans.iter().map(|l| l["id"].as_str().unwrap()).collect();
        let mut cells: BTreeMap<(String, u32, String), BTreeSet<&str>> = BTreeMap::new();
        for h in &s.history {
            let when = at(h["occurredAt"].as_str().unwrap());
            let loan = h["loanId"].as_str().unwrap();
            if when < start || when >= end || !visible_ids.contains(loan) {
                continue;
            }
            let stage = northstar(h["status"].as_str().unwrap());
            let order = [
                "1. Opened",
                "2. Pre-Approved",
                "3. Rate Locked",
                "4. Approved",
                "5. Closed & Funded",
            ]
            .iter()
            .position(|x| *x == stage)
            .map(|p| p as u32 + 1)
            .unwrap_or(6);
            cells
                .entry((iso_week(when), order, stage.to_string()))
                .or_default()
                .insert(loan);
        }
        let expected: Vec<Value> = cells
            .iter()
            .map(|((period, order, stage), ids)| {
                let amount: i128 = ids.iter().filter_map(|id| scaled(&by_id[id]["loanAmount"])).sum();
                json!({"period": period, "stage": stage, "stageOrder": order, "loanCount": ids.len(), "loanAmount": money(amount)})
            })
            .collect();
        assert_eq!(got["buckets"], json!(expected), "milestones for {who}");
        milestone_rows += expected.len();

        // The org-wide reports: the same for everyone allowed, forbidden for the others.
        let org = ["Admin", "Processor", "ConciergeKey"]
            .iter()
            .any(|r| caller["roles"].as_array().unwrap().iter().any(|x| x == r));
        let wh = s
            .app
            .call_tool(
                &t,
                "warehouse_loan_milestone_report",
                json!({"fromDate": "2025-10-01", "toDate": "2026-03-15"}),
            )
            .await;
        let mlo = s
            .app
            .call_tool(
                &t,
                "mlo_pipeline_report",
                json!({"fromDate": "2025-06-01", "bucket": "Week"}),
            )
            .await;
        if !org {
            assert_eq!(
                (wh["isError"].clone(), mlo["isError"].clone()),
                (json!(true), json!(true)),
                "{who}"
            );
            continue;
        }
        let order = [
            "Opened",
            "Submitted",
            "Underwriting",
            "Approved",
            "Clear to Close",
            "Docs",
            "Funded/Closed",
            "Canceled",
            "Denied",
            "Withdrawn",
        ];
        let mut wcells: BTreeMap<(String, usize, String), BTreeSet<&str>> = BTreeMap::new();
        for m in &s.milestones {
            let when = at(m["occurredAt"].as_str().unwrap());
            if when < at("2025-10-01T00:00:00Z") || when >= at("2026-03-16T00:00:00Z") {
                continue;
            }
            let name = m["milestone"].as_str().unwrap();
            wcells
                .entry((
                    month(when),
                    order.iter().position(|x| *x == name).unwrap_or(999),
                    name.to_string(),
                ))
                .or_default()
                .insert(m["loanId"].as_str().unwrap());
        }
        let rows = wh["structuredContent"]["rows"].as_array().unwrap();
        let got_cells: Vec<(String, String, u64)> = rows
            .iter()
            .map(|r| {
                (
                    r["period"].as_str().unwrap().into(),
                    r["milestone"].as_str().unwrap().into(),
                    r["loanCount"].as_u64().unwrap(),
                )
            })
            .collect();
        let want_cells: Vec<(String, String, u64)> = wcells
            .iter()
            .map(|((p, _, m), ids)| (p.clone(), m.clone(), ids.len() as u64))
            .collect();
        assert_eq!(got_cells, want_cells, "warehouse for {who}");
        warehouse_rows += want_cells.len();

        let mut dcells: BTreeMap<(String, String), u64> = BTreeMap::new();
        for d in &s.deals {
            let when = at(d["createdAt"].as_str().unwrap());
            if when < at("2025-06-01T00:00:00Z") || when >= at("2026-03-16T00:00:00Z") {
                continue;
            }
            *dcells
                .entry((iso_week(when), d["stage"].as_str().unwrap().to_string()))
                .or_default() += 1;
        }
        let rows = mlo["structuredContent"]["rows"].as_array().unwrap();
        let got_total: u64 = rows.iter().map(|r| r["entryCount"].as_u64().unwrap()).sum();
        let got_cells: BTreeMap<(String, String), u64> = rows
            .iter()
            .map(|r| {
                (
                    (
                        r["period"].as_str().unwrap().into(),
                        r["stage"].as_str().unwrap().into(),
                    ),
                    r["entryCount"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(got_cells, dcells, "mlo for {who}");
        assert_eq!(got_total, dcells.values().sum::<u64>());
        deal_rows += dcells.len();
    }
    assert!(
        milestone_rows > 10 && warehouse_rows > 10 && deal_rows > 10,
        "too little data compared: {milestone_rows} {warehouse_rows} {deal_rows}"
    );
}
