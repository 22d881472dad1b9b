//! Differential tests on seeded data: every report, for callers of every role (several of them
//! holding more than one), with several argument sets each, on SQLite and on PostgreSQL, equals a
//! straightforward implementation written here as a whole JSON document, and the two engines
//! answer byte for byte the same. The oracle shares no code with the plugins or the host's query
//! compiler: it reads the import files and applies docs/design.md §5 and §7 (scope from `data.rs`).
//! One data set is generated back from a mid-March day, one from 2 January 2027, so windows run
//! across a year boundary and through ISO week 2026-W53.

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Value};
use time::{Date, Duration};

use crate::helpers::{
    example_plugin, seed_app_on, spawn_app_with, tool_manifest, tool_wasm, AppOptions, TestApp,
    TODAY,
};

pub(crate) mod applications;
mod catalogue;
mod licensing;
mod listing;
mod oracle;
mod people;
mod tables;
mod values;
mod warehouse_query;

use oracle::{
    loan_pipeline_report, mlo_pipeline_report, report_loan_milestones, report_loans,
    warehouse_loan_milestone_report,
};
use tables::TOOLS;
use values::{at, money, months_after, period, round_half_away};

struct World {
    app: TestApp,
    today: Date,
    agents: HashMap<String, Value>,
    loans: Vec<Value>,
    history: Vec<Value>,
    milestones: Vec<Value>,
    deals: Vec<Value>,
    licenses: Vec<Value>,
    rates: Vec<Value>,
    applications: Vec<Value>,
}

async fn world(seed: u64, today: &str, postgres: bool) -> World {
    world_in(seed, today, postgres, None).await
}

/// A world whose tool `ported.1` is the build written in language `ported.0`
/// (plugins/examples/<language>/<tool>), when given. Their compiled components are cached across
/// the apps of the test run (an interpreter's component takes seconds to compile).
async fn world_in(seed: u64, today: &str, postgres: bool, ported: Option<(&str, &str)>) -> World {
    let mut options = AppOptions {
        postgres,
        env: vec![("LOANHOST_TODAY", today.to_string())],
        ..AppOptions::default()
    };
    let others = [
        "query_loans",
        "search_users",
        "get_user_licenses",
        "search_pricing",
        "get_data_warehouse_fields",
        "query_data_warehouse",
        "get_loan_reporting_metadata",
        "get_loan_application",
        "search_loan_applications",
        "get_loan_application_tasks",
        "get_loan_application_contacts",
    ];
    for t in TOOLS.into_iter().chain(others) {
        options = match ported {
            Some((language, tool)) if t == tool => {
                let (wasm, manifest) = example_plugin(language, t);
                options
                    .with_shared_compile_cache()
                    .plugin(t, wasm, manifest)
            }
            _ => options.plugin(t, tool_wasm(t), tool_manifest(t)),
        };
    }
    let app = spawn_app_with(options).await;
    let data = seed_app_on(&app, seed, 500, today).await;
    World {
        app,
        today: loanhost::config::parse_date(today).unwrap(),
        agents: data.agents,
        loans: data.loans,
        history: data.history,
        milestones: data.milestones,
        deals: data.deals,
        licenses: data.licenses,
        rates: data.rates,
        applications: data.applications,
    }
}

// ---- callers and argument sets --------------------------------------------------------------

/// Callers of every role: the demo users (three of whom hold several roles), a dual-licensed
/// officer, a concierge of another company, an assistant and a plain referrer.
fn callers(w: &World) -> Vec<Value> {
    let by_email = |e: &str| {
        w.agents
            .values()
            .find(|a| a["email"] == format!("{e}@demo.loanhost.local"))
            .unwrap_or_else(|| panic!("the seed has no {e}"))
            .clone()
    };
    let mut out: Vec<Value> = [
        "admin",
        "processor",
        "concierge",
        "agent",
        "prelicensed",
        "lead",
        "officer-processor",
        "referrer-concierge",
    ]
    .into_iter()
    .map(by_email)
    .collect();
    let first = |pick: &dyn Fn(&Value) -> bool| {
        let mut all: Vec<&Value> = w.agents.values().filter(|a| pick(a)).collect();
        all.sort_by_key(|a| a["email"].as_str().unwrap().to_string());
        all.first().map(|a| (*a).clone())
    };
    let email = |a: &Value| a["email"].as_str().unwrap().to_string();
    let on_loans = |a: &Value, field: &str| w.loans.iter().any(|l| l[field] == a["id"]);
    out.extend(first(&|a| a["roles"] == json!(["DualLicensedAgent"])));
    out.extend(first(&|a| {
        a["roles"] == json!(["ConciergeKey"]) && email(a) != "concierge@demo.loanhost.local"
    }));
    out.extend(first(&|a| {
        email(a).starts_with("assistant") && on_loans(a, "loanAssistantId")
    }));
    out.extend(first(&|a| {
        a["roles"] == json!(["Agent"])
            && email(a).starts_with("referrer")
            && on_loans(a, "referringAgentId")
    }));
    assert_eq!(out.len(), 12, "every kind of caller is in the seed");
    out
}

fn ymd(d: Date) -> String {
    d.to_string()
}

fn ts(d: Date) -> String {
    format!("{d}T00:00:00Z")
}

/// Argument sets per tool, relative to the data's "today".
fn argument_sets(w: &World) -> Vec<(&'static str, Value)> {
    let today = w.today;
    let some_officers: Vec<&str> = w
        .loans
        .iter()
        .step_by(97)
        .take(3)
        .map(|l| l["loanOfficerId"].as_str().unwrap())
        .collect();
    let a_referrer = w
        .loans
        .iter()
        .find_map(|l| l["referringAgentId"].as_str())
        .unwrap();
    vec![
        ("report_loans", json!({})),
        (
            "report_loans",
            json!({"groupBy": "Status", "metric": "Average"}),
        ),
        (
            "report_loans",
            json!({"groupBy": "LoanOfficer", "metric": "Sum", "metricField": "LockedCompensation"}),
        ),
        (
            "report_loans",
            json!({"groupBy": "ReferringAgent", "metric": "Max", "metricField": "EstimatedCompensation"}),
        ),
        (
            "report_loans",
            json!({"groupBy": "Month", "metric": "Min", "dateField": "ClosingDate"}),
        ),
        (
            "report_loans",
            json!({"groupBy": "Quarter", "dateField": "Updated", "filter": {"loanAmountMin": 200000, "loanAmountMax": "900000.5"}}),
        ),
        (
            "report_loans",
            json!({"groupBy": "Year", "metric": "Average", "metricField": "EstimatedCompensation"}),
        ),
        (
            "report_loans",
            json!({"groupBy": "LoanType", "metric": "Sum", "filter": {"statuses": ["Loan Open", "Loan Funded", "Loan Sold", "Loan Withdrawn"], "purposes": ["Purchase", "Refinance"]}}),
        ),
        (
            "report_loans",
            json!({"groupBy": "Purpose", "filter": {"statusDateFrom": ts(today - Duration::days(120)), "statusDateTo": ts(today), "propertyState": "tx"}}),
        ),
        (
            "report_loans",
            json!({"groupBy": "Status", "metric": "Max", "filter": {"loanOfficerIds": some_officers, "commissionMin": 1500}}),
        ),
        (
            "report_loans",
            json!({"groupBy": "LoanOfficer", "filter": {"referringAgentId": a_referrer.to_uppercase()}}),
        ),
        (
            "report_loans",
            json!({"metric": "Average", "filter": {"searchText": " LN0000 ", "updatedFrom": ts(today - Duration::days(400)), "closingDateTo": ts(today + Duration::days(30))}}),
        ),
        ("loan_pipeline_report", json!({})),
        ("loan_pipeline_report", json!({"lookbackMonths": 14})),
        (
            "loan_pipeline_report",
            json!({"lookbackMonths": 0, "filter": {"loanTypes": ["FHA", "VA"]}}),
        ),
        ("loan_pipeline_report", json!({"lookbackMonths": 99})),
        ("report_loan_milestones", json!({})),
        (
            "report_loan_milestones",
            json!({"granularity": "Week", "lookback": 6}),
        ),
        (
            "report_loan_milestones",
            json!({"granularity": "Week", "lookback": 60, "groupByNorthstar": false}),
        ),
        (
            "report_loan_milestones",
            json!({"granularity": "Quarterly", "lookback": -2, "excludeStages": ["Other", "3. Rate Locked"]}),
        ),
        (
            "report_loan_milestones",
            json!({"lookback": 15, "groupByNorthstar": false, "excludeStages": ["Loan Open"], "filter": {"purposes": ["Purchase"], "loanAmountMax": 600000}}),
        ),
        (
            "warehouse_loan_milestone_report",
            json!({"fromDate": ymd(today - Duration::days(170)), "toDate": ymd(today)}),
        ),
        (
            "warehouse_loan_milestone_report",
            json!({"fromDate": ymd(today - Duration::days(60)), "toDate": ymd(today + Duration::days(10)), "bucket": "Week"}),
        ),
        (
            "warehouse_loan_milestone_report",
            json!({"fromDate": ymd(today), "toDate": ymd(today - Duration::days(1))}),
        ),
        ("mlo_pipeline_report", json!({})),
        (
            "mlo_pipeline_report",
            json!({"fromDate": ymd(today - Duration::days(300)), "bucket": "Week"}),
        ),
        (
            "mlo_pipeline_report",
            json!({"fromDate": ymd(today - Duration::days(400)), "toDate": ymd(today - Duration::days(3)), "bucket": "Month"}),
        ),
        (
            "mlo_pipeline_report",
            json!({"fromDate": ymd(today + Duration::days(1))}),
        ),
    ]
}

fn expected(w: &World, tool: &str, caller: &Value, args: &Value) -> Value {
    match tool {
        "report_loans" => report_loans(w, caller, args),
        "loan_pipeline_report" => loan_pipeline_report(w, caller, args),
        "report_loan_milestones" => report_loan_milestones(w, caller, args),
        "warehouse_loan_milestone_report" => warehouse_loan_milestone_report(w, caller, args),
        _ => mlo_pipeline_report(w, caller, args),
    }
}

/// What a tool answered: its structured content, or its error text as a JSON string.
async fn answer(app: &TestApp, token: &str, tool: &str, args: &Value) -> Value {
    let result = app.call_tool(token, tool, args.clone()).await;
    if result["isError"] == true {
        result["content"][0]["text"].clone()
    } else {
        let text: Value =
            serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(
            text, result["structuredContent"],
            "{tool}: text and structured content differ"
        );
        result["structuredContent"].clone()
    }
}

/// Every tool, argument set and caller on one data set, on both engines.
async fn differential(seed: u64, today: &str) {
    // Arrange: the same files imported into SQLite and PostgreSQL.
    let engines = [
        world(seed, today, false).await,
        world(seed, today, true).await,
    ];
    let w = &engines[0];
    assert_eq!(w.loans, engines[1].loans, "both engines got the same data");
    let sets = argument_sets(w);
    let mut compared = BTreeMap::<&str, usize>::new();

    for caller in callers(w) {
        let email = caller["email"].as_str().unwrap();
        let who = format!("{email} {}", caller["roles"]);
        for (tool, args) in &sets {
            // Act
            let mut got = Vec::new();
            for e in &engines {
                got.push(answer(&e.app, &e.app.token_for(email), tool, args).await);
            }

            // Assert
            let want = expected(w, tool, &caller, args);
            assert_eq!(
                got[0], want,
                "sqlite: {tool} {args} for {who} (today {today})"
            );
            assert_eq!(
                got[1], want,
                "postgres: {tool} {args} for {who} (today {today})"
            );
            let rows = ["buckets", "rows", "currentPipelineByStage"]
                .iter()
                .filter_map(|k| want[*k].as_array())
                .map(|a| a.iter().filter(|r| r["count"] != 0).count())
                .sum::<usize>();
            *compared.entry(tool).or_default() += rows;
        }
    }
    for tool in TOOLS {
        assert!(
            compared.get(tool).copied().unwrap_or(0) > 50,
            "too little data compared for {tool}: {compared:?}"
        );
    }
}

/// `report_loans` written in `language` (plugins/examples/<language>/report_loans) answers
/// every argument set, for every caller, on both engines, as the oracle does: the same answers
/// as the Rust build, which the tests above hold to the same oracle.
async fn ported(language: &str, seed: u64, today: &str) {
    // Arrange
    let engines = [
        world_in(seed, today, false, Some((language, "report_loans"))).await,
        world_in(seed, today, true, Some((language, "report_loans"))).await,
    ];
    let w = &engines[0];
    let sets: Vec<_> = argument_sets(w)
        .into_iter()
        .filter(|(tool, _)| *tool == "report_loans")
        .collect();
    assert!(sets.len() >= 10);
    let mut buckets = 0;
    for caller in callers(w) {
        let email = caller["email"].as_str().unwrap();
        for (tool, args) in &sets {
            // Act
            let want = expected(w, tool, &caller, args);
            for (e, engine) in engines.iter().zip(["sqlite", "postgres"]) {
                let got = answer(&e.app, &e.app.token_for(email), tool, args).await;
                // Assert
                assert_eq!(
                    got, want,
                    "{language} on {engine}: {tool} {args} for {email} {}",
                    caller["roles"]
                );
            }
            buckets += want["buckets"].as_array().map_or(0, Vec::len);
        }
    }
    assert!(buckets > 50, "too little data compared: {buckets} buckets");
}

#[tokio::test]
async fn report_loans_written_in_python_equals_the_oracle_on_both_engines() {
    ported("python", 31, TODAY).await;
}

#[tokio::test]
async fn report_loans_written_in_typescript_equals_the_oracle_on_both_engines() {
    ported("typescript", 31, TODAY).await;
}

#[tokio::test]
async fn every_report_equals_the_oracle_on_both_engines_in_march() {
    differential(31, TODAY).await;
}

#[tokio::test]
async fn every_report_equals_the_oracle_on_both_engines_across_new_year_and_week_53() {
    // 2027-01-02 is a Saturday in ISO week 2026-W53: weekly windows end in week 53 of the
    // previous ISO year, monthly ones run from 2026 into 2027.
    assert_eq!(
        Date::from_calendar_date(2027, time::Month::January, 2)
            .unwrap()
            .to_iso_week_date(),
        (2026, 53, time::Weekday::Saturday)
    );
    differential(32, "2027-01-02").await;
}

#[test]
fn the_oracles_helpers_are_right() {
    assert_eq!(money(-12_345_000), json!(-1234.5));
    assert_eq!(money(5), json!(0.0005));
    assert_eq!(round_half_away(-15, 10), -2);
    assert_eq!(round_half_away(15, 10), 2);
    assert_eq!(round_half_away(14, 10), 1);
    assert_eq!(
        months_after(
            Date::from_calendar_date(2027, time::Month::January, 2).unwrap(),
            -1
        ),
        Date::from_calendar_date(2026, time::Month::December, 1).unwrap()
    );
    assert_eq!(period(at("2027-01-03T23:59:59Z"), "Week"), "2026-W53");
    assert_eq!(period(at("2027-01-04T00:00:00Z"), "Week"), "2027-W01");
    assert_eq!(period(at("2026-12-31T12:00:00Z"), "Quarter"), "2026-Q4");
}
