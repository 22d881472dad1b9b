//! The `data` capability end to end through a real component (`query_echo`): counts and sums
//! for callers of every role equal a naive in-memory oracle that applies the scope table
//! first; hostile strings are data, never SQL; name fields are refused to non-readers.

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Value};

use crate::helpers::{fixture_wasm, seed_app, spawn_app_with, AppOptions, TestApp, DEFAULT_ROLES};

pub fn query_echo_manifest() -> String {
    crate::helpers::manifest(
        "query_echo",
        DEFAULT_ROLES,
        &["loans", "los-status-history"],
        64,
        10_000,
        4 * 1024 * 1024,
    )
}

/// A test app with the `query_echo` fixture and seeded data.
pub struct World {
    pub app: TestApp,
    pub agents: HashMap<String, Value>,
    pub loans: Vec<Value>,
    pub history: Vec<Value>,
}

/// The engines every data test runs on (false: SQLite, true: PostgreSQL).
const ENGINES: [bool; 2] = [false, true];

fn engine(postgres: bool) -> &'static str {
    if postgres {
        "postgres"
    } else {
        "sqlite"
    }
}

/// A test app's options on one engine with the `query_echo` fixture.
pub fn query_echo_options(postgres: bool) -> AppOptions {
    let mut options = AppOptions::default().plugin(
        "query_echo",
        fixture_wasm("query-echo"),
        query_echo_manifest(),
    );
    options.postgres = postgres;
    options
}

/// A test app on one engine with `query_echo` and `loans` seeded loans.
pub async fn world(seed: u64, loans: u64, postgres: bool) -> World {
    let app = spawn_app_with(query_echo_options(postgres)).await;
    let data = seed_app(&app, seed, loans).await;
    World {
        app,
        agents: data.agents,
        loans: data.loans,
        history: data.history,
    }
}

/// The oracle's count, count of known values, sum, minimum and maximum of a group's scaled
/// amounts (`None`: the loan has none), as a statement's five aggregates answer them.
pub fn aggregates_of(
    amounts: &[Option<i128>],
) -> (i64, i64, Option<i128>, Option<i128>, Option<i128>) {
    let known: Vec<i128> = amounts.iter().flatten().copied().collect();
    (
        amounts.len() as i64,
        known.len() as i64,
        known.iter().copied().reduce(|a, b| a + b),
        known.iter().copied().min(),
        known.iter().copied().max(),
    )
}

/// A filter's meaning, as the oracle applies it to one loan.
type LoanPredicate = Box<dyn Fn(&Value) -> bool>;

/// Scaled (×10^4) value of a decimal JSON value, parsed independently of the host.
pub fn scaled(v: &Value) -> Option<i128> {
    let s = match v {
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        _ => return None,
    };
    let (negative, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.as_str()),
    };
    let (w, f) = digits.split_once('.').unwrap_or((digits, ""));
    assert!(f.len() <= 4, "more than 4 decimals: {s}");
    let frac = format!("{f:0<4}");
    let magnitude = w.parse::<i128>().unwrap() * 10_000 + frac.parse::<i128>().unwrap();
    Some(if negative { -magnitude } else { magnitude })
}

#[test]
fn scaled_reads_signs_and_fractions() {
    assert_eq!(scaled(&json!(-12.5)), Some(-125_000));
    assert_eq!(scaled(&json!("-0.0001")), Some(-1));
    assert_eq!(scaled(&json!(350000.25)), Some(3_500_002_500));
    assert_eq!(scaled(&json!("100")), Some(1_000_000));
    assert_eq!(scaled(&Value::Null), None);
}

/// The scope table of docs/design.md §5, applied naively.
pub fn visible(agent: &Value, agents: &HashMap<String, Value>, loan: &Value) -> bool {
    let me = agent["id"].as_str().unwrap();
    let roles: Vec<&str> = agent["roles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    let has = |r: &str| roles.contains(&r);
    let field = |k: &str| loan[k].as_str();
    let mut ok = has("Admin");
    if has("Processor") {
        ok |= agent["companyId"].as_str().is_some()
            && field("companyId") == agent["companyId"].as_str();
    }
    if has("ConciergeKey") {
        let managed: Vec<&str> = agents[me]["managedAgentIds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap())
            .collect();
        ok |= field("loanOfficerId").is_some_and(|o| managed.contains(&o));
    }
    if has("PreLicensed") {
        ok |= field("referringAgentId") == Some(me);
    } else if has("Agent") || has("DualLicensedAgent") {
        ok |= field("loanOfficerId") == Some(me)
            || field("loanAssistantId") == Some(me)
            || field("referringAgentId") == Some(me);
    }
    ok
}

/// status -> (count, sum of loanAmount) from the capability.
async fn by_status(
    app: &TestApp,
    token: &str,
    filter: Option<Value>,
) -> BTreeMap<String, (i64, Option<i128>)> {
    let mut args = json!({"dataset": "loans", "groupBy": [{"field": "status"}], "aggregates": [["count", null], ["sum", "loanAmount"]]});
    if let Some(f) = filter {
        args["filter"] = f;
    }
    let r = app.call_ok(token, "query_echo", args).await;
    r["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row[0].as_str().unwrap().to_string(),
                (row[1].as_i64().unwrap(), scaled(&row[2])),
            )
        })
        .collect()
}

fn oracle(
    w: &World,
    agent: &Value,
    keep: impl Fn(&Value) -> bool,
) -> BTreeMap<String, (i64, Option<i128>)> {
    let mut out: BTreeMap<String, (i64, Option<i128>)> = BTreeMap::new();
    for loan in w
        .loans
        .iter()
        .rev()
        .fold(Vec::<&Value>::new(), |mut acc, l| {
            if !acc.iter().any(|x| x["id"] == l["id"]) {
                acc.push(l);
            }
            acc
        })
    {
        if !visible(agent, &w.agents, loan) || !keep(loan) {
            continue;
        }
        let e = out
            .entry(loan["status"].as_str().unwrap().to_string())
            .or_insert((0, None));
        e.0 += 1;
        if let Some(a) = scaled(&loan["loanAmount"]) {
            e.1 = Some(e.1.unwrap_or(0) + a);
        }
    }
    out
}

#[tokio::test]
async fn counts_and_sums_equal_the_oracle_for_every_role() {
    for (seed, postgres) in [(1u64, false), (2, false), (3, false), (4, true), (5, true)] {
        // Arrange
        let w = world(seed, 300, postgres).await;
        let mut callers: Vec<&Value> = w
            .agents
            .values()
            .filter(|a| {
                a["email"]
                    .as_str()
                    .unwrap()
                    .ends_with("@demo.loanhost.local")
                    && !a["email"].as_str().unwrap().starts_with("referrer")
                    && !a["email"].as_str().unwrap().starts_with("assistant")
                    && !a["email"].as_str().unwrap().starts_with("processor")
                    && !a["email"].as_str().unwrap().starts_with("officer")
                    && !a["email"].as_str().unwrap().starts_with("concierge")
            })
            .collect();
        // Plus one of every other kind: an assistant, a dual-licensed officer, a referrer.
        for prefix in ["assistant", "referrer", "concierge", "processor"] {
            if let Some(a) = w.agents.values().find(|a| {
                a["email"].as_str().unwrap().starts_with(prefix)
                    && a["email"].as_str().unwrap() != format!("{prefix}@demo.loanhost.local")
            }) {
                callers.push(a);
            }
        }
        if let Some(a) = w
            .agents
            .values()
            .find(|a| a["roles"][0] == "DualLicensedAgent")
        {
            callers.push(a);
        }
        let filters: Vec<(Value, LoanPredicate)> = vec![
            (Value::Null, Box::new(|_| true)),
            (
                json!({"statuses": ["Loan Open", "Loan Funded", "Loan Sold"]}),
                Box::new(|l: &Value| {
                    ["Loan Open", "Loan Funded", "Loan Sold"]
                        .contains(&l["status"].as_str().unwrap())
                }),
            ),
            (
                json!({"loanAmountMin": 250000, "loanAmountMax": "3000000.5"}),
                Box::new(|l: &Value| {
                    scaled(&l["loanAmount"])
                        .is_some_and(|a| (2_500_000_000..=30_000_005_000).contains(&a))
                }),
            ),
            (
                json!({"loanTypes": ["FHA"], "propertyState": "ca"}),
                Box::new(|l: &Value| l["loanType"] == "FHA" && l["propertyState"] == "CA"),
            ),
        ];
        assert!(callers.len() >= 8, "not enough callers: {}", callers.len());
        let mut partial_views = 0;

        for caller in &callers {
            let token = w.app.token_for(caller["email"].as_str().unwrap());
            for (filter, keep) in &filters {
                // Act
                let got =
                    by_status(&w.app, &token, (!filter.is_null()).then(|| filter.clone())).await;

                // Assert
                let expected = oracle(&w, caller, keep.as_ref());
                assert_eq!(
                    got, expected,
                    "seed {seed}, caller {} {:?}, filter {filter}",
                    caller["email"], caller["roles"]
                );
                if filter.is_null() {
                    let seen: i64 = got.values().map(|v| v.0).sum();
                    if caller["roles"][0] == "Admin" {
                        assert_eq!(seen, 300, "the admin sees every loan");
                    } else if seen > 0 && seen < 300 {
                        partial_views += 1;
                    }
                }
            }
        }
        assert!(
            partial_views >= 4,
            "seed {seed}: too few callers with a non-trivial scope ({partial_views})"
        );
    }
}

#[tokio::test]
async fn hostile_strings_are_data() {
    for postgres in ENGINES {
        // Arrange
        let w = world(7, 200, postgres).await;
        let admin = w.app.token_for("admin@demo.loanhost.local");
        let hostile = [
            "o'brien",
            "%",
            "_",
            "\\",
            "'; DROP TABLE loans; --",
            "Müller",
            "smith ln0000001",
            "\"",
            "ＳＭＩＴＨ",
        ];

        for text in hostile {
            // Act
            let got: i64 = by_status(&w.app, &admin, Some(json!({"searchText": text})))
                .await
                .values()
                .map(|v| v.0)
                .sum();

            // Assert: each whitespace token must appear (case-insensitively) in the loan number,
            // borrower names or email.
            let expected = w
                .loans
                .iter()
                .filter(|l| {
                    let hay = [
                        "loanNumber",
                        "borrowerFirstName",
                        "borrowerLastName",
                        "borrowerEmail",
                    ]
                    .iter()
                    .filter_map(|k| l[*k].as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
                    .to_lowercase();
                    text.split_whitespace()
                        .all(|t| hay.contains(&t.to_lowercase()))
                })
                .count() as i64;
            assert_eq!(got, expected, "{}: searchText {text:?}", engine(postgres));
        }
        let r = w
            .app
            .call_ok(
                &admin,
                "query_echo",
                json!({"dataset": "loans", "aggregates": [["count", null]]}),
            )
            .await;
        assert_eq!(
            r["rows"][0][0],
            json!(w.loans.len() as i64),
            "the table survived"
        );
    }
}

#[tokio::test]
async fn name_fields_are_refused_to_callers_who_may_not_read_them() {
    // Arrange
    let w = world(9, 100, false).await;
    let args = json!({"dataset": "loans", "groupBy": [{"field": "loanOfficerName"}], "aggregates": [["count", null]]});

    // Act
    let agent = w
        .app
        .call_err(
            &w.app.token_for("agent@demo.loanhost.local"),
            "query_echo",
            args.clone(),
        )
        .await;
    let processor = w
        .app
        .call_ok(
            &w.app.token_for("processor@demo.loanhost.local"),
            "query_echo",
            args,
        )
        .await;

    // Assert
    assert_eq!(agent, "forbidden: field `loanOfficerName` is readable only by callers with Admin, Processor or ConciergeKey");
    assert!(!processor["rows"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn periods_distinct_counts_and_label_maps_run_in_the_database() {
    for postgres in ENGINES {
        // Arrange
        let w = world(11, 300, postgres).await;
        let admin = w.app.token_for("admin@demo.loanhost.local");

        // Act: distinct loans per (month, stage) of the LOS history, stages from a label map.
        let r = w
        .app
        .call_ok(
            &admin,
            "query_echo",
            json!({
                "dataset": "los-status-history",
                "groupBy": [{"period": ["occurredAt", "month"]}, {"mapped": ["milestone", [["Loan Open", "1. Opened"], ["Loan Closed", "5. Closed & Funded"], ["Loan Funded", "5. Closed & Funded"]], "Other"]}],
                "distinctOn": "loanId",
                "aggregates": [["count", null], ["sum", "loan.loanAmount"]],
                "limit": 5000
            }),
        )
        .await;
        let weeks = w
        .app
        .call_ok(&admin, "query_echo", json!({"dataset": "loans", "groupBy": [{"period": ["statusDate", "week"]}, {"period": ["statusDate", "quarter"]}], "aggregates": [["count", null]], "limit": 3}))
        .await;

        // Assert: every row equals the history read here, labels written out independently.
        let amounts: HashMap<&str, Option<i128>> = w
            .loans
            .iter()
            .map(|l| (l["id"].as_str().unwrap(), scaled(&l["loanAmount"])))
            .collect();
        let mut cells: BTreeMap<(String, &str), std::collections::BTreeSet<&str>> = BTreeMap::new();
        for h in &w.history {
            let at = time::OffsetDateTime::parse(
                h["occurredAt"].as_str().unwrap(),
                &time::format_description::well_known::Rfc3339,
            )
            .unwrap();
            let stage = match h["status"].as_str().unwrap() {
                "Loan Open" => "1. Opened",
                "Loan Closed" | "Loan Funded" => "5. Closed & Funded",
                _ => "Other",
            };
            cells
                .entry((
                    format!("{:04}-{:02}", at.year(), u8::from(at.month())),
                    stage,
                ))
                .or_default()
                .insert(h["loanId"].as_str().unwrap());
        }
        let mut got: Vec<(String, String, i64, Option<i128>)> = r["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| {
                (
                    row[0].as_str().unwrap().to_string(),
                    row[1].as_str().unwrap().to_string(),
                    row[2].as_i64().unwrap(),
                    scaled(&row[3]),
                )
            })
            .collect();
        got.sort();
        let want: Vec<(String, String, i64, Option<i128>)> = cells
            .iter()
            .map(|((period, stage), ids)| {
                (
                    period.clone(),
                    stage.to_string(),
                    ids.len() as i64,
                    ids.iter().filter_map(|id| amounts[id]).reduce(|a, b| a + b),
                )
            })
            .collect();
        assert_eq!(got, want, "{}", engine(postgres));
        assert_eq!(weeks["truncated"], true);
        let mut labels: Vec<(String, String)> = w
            .loans
            .iter()
            .filter_map(|l| l["statusDate"].as_str())
            .map(|d| {
                let t =
                    time::OffsetDateTime::parse(d, &time::format_description::well_known::Rfc3339)
                        .unwrap();
                let (y, wk, _) = t.date().to_iso_week_date();
                (
                    format!("{y:04}-W{wk:02}"),
                    format!("{:04}-Q{}", t.year(), (u8::from(t.month()) - 1) / 3 + 1),
                )
            })
            .collect();
        labels.sort();
        labels.dedup();
        let got_labels: Vec<(String, String)> = weeks["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| {
                (
                    row[0].as_str().unwrap().into(),
                    row[1].as_str().unwrap().into(),
                )
            })
            .collect();
        assert_eq!(got_labels.len(), 3, "{}", engine(postgres));
        for l in &got_labels {
            assert!(
                labels.contains(l),
                "{}: no loan has the period {l:?}",
                engine(postgres)
            );
        }
    }
}

/// An instant (epoch ms) as RFC 3339 text, UTC.
pub fn iso(ms: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

/// The label the spec's periods give an instant (UTC), computed here without the host.
pub fn label(ms: i64, unit: &str) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).unwrap();
    let (y, m) = (t.year(), u8::from(t.month()));
    match unit {
        "week" => {
            let (y, w, _) = t.date().to_iso_week_date();
            format!("{y:04}-W{w:02}")
        }
        "quarter" => format!("{y:04}-Q{}", (m - 1) / 3 + 1),
        "year" => format!("{y:04}"),
        _ => format!("{y:04}-{m:02}"),
    }
}

/// The first instant (epoch ms, UTC) of the month, or the ISO week, that holds `ms`.
pub fn period_start(ms: i64, week: bool) -> i64 {
    let d = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap()
        .date();
    let d = if week {
        d - time::Duration::days(i64::from(d.weekday().number_days_from_monday()))
    } else {
        d.replace_day(1).unwrap()
    };
    (d.midnight().assume_utc().unix_timestamp_nanos() / 1_000_000) as i64
}

pub fn epoch_ms(s: &str) -> i64 {
    let t = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).unwrap();
    (t.unix_timestamp_nanos() / 1_000_000) as i64
}

/// A random filter and the oracle's reading of it.
fn random_filter(rng: &mut rand::rngs::StdRng, w: &World) -> (Value, LoanPredicate) {
    use rand::seq::SliceRandom;
    use rand::Rng;
    let statuses: Vec<String> = {
        let mut all: Vec<&str> = w
            .loans
            .iter()
            .map(|l| l["status"].as_str().unwrap())
            .collect();
        all.sort();
        all.dedup();
        let n = rng.gen_range(1..4);
        all.choose_multiple(rng, n).map(|s| s.to_string()).collect()
    };
    let officers: Vec<String> = w
        .loans
        .choose_multiple(rng, 3)
        .map(|l| l["loanOfficerId"].as_str().unwrap().to_string())
        .collect();
    let some_loan = w.loans.choose(rng).unwrap().clone();
    let base = epoch_ms("2026-03-15T12:00:00Z");
    let day = 86_400_000i64;
    let mut filter = serde_json::Map::new();
    let mut checks: Vec<LoanPredicate> = Vec::new();
    let p = 0.15;
    if rng.gen_bool(p) {
        let s = statuses.clone();
        filter.insert("statuses".into(), json!(s));
        checks.push(Box::new(move |l| {
            s.iter().any(|x| l["status"] == x.as_str())
        }));
    }
    if rng.gen_bool(p) {
        let t = ["FHA", "VA", "Conventional"][rng.gen_range(0..3)].to_string();
        filter.insert("loanTypes".into(), json!([t]));
        checks.push(Box::new(move |l| l["loanType"] == t.as_str()));
    }
    if rng.gen_bool(p) {
        let t = ["Purchase", "Refinance", "Home Equity"][rng.gen_range(0..3)].to_string();
        filter.insert("purposes".into(), json!([t]));
        checks.push(Box::new(move |l| l["purpose"] == t.as_str()));
    }
    for (from_key, to_key, field) in [
        ("statusDateFrom", "statusDateTo", "statusDate"),
        ("closingDateFrom", "closingDateTo", "estimatedClosingDate"),
        ("updatedFrom", "updatedTo", "updated"),
    ] {
        if rng.gen_bool(p) {
            let from = base - rng.gen_range(0..700) * day;
            let to = from + rng.gen_range(1..300) * day;
            filter.insert(from_key.into(), json!(iso(from)));
            filter.insert(to_key.into(), json!(iso(to)));
            checks.push(Box::new(move |l| {
                l[field]
                    .as_str()
                    .is_some_and(|s| (from..=to).contains(&epoch_ms(s)))
            }));
        }
    }
    if rng.gen_bool(p) {
        let (lo, hi) = (
            rng.gen_range(50_000..400_000) as i128,
            rng.gen_range(400_000..5_000_000) as i128,
        );
        filter.insert("loanAmountMin".into(), json!(lo));
        filter.insert("loanAmountMax".into(), json!(hi));
        checks.push(Box::new(move |l| {
            scaled(&l["loanAmount"]).is_some_and(|a| (lo * 10_000..=hi * 10_000).contains(&a))
        }));
    }
    if rng.gen_bool(p) {
        let lo = rng.gen_range(0..5_000) as i128;
        filter.insert("commissionMin".into(), json!(lo));
        checks.push(Box::new(move |l| {
            scaled(&l["lockedCompensation"]).is_some_and(|a| a >= lo * 10_000)
        }));
    }
    if rng.gen_bool(p) {
        let s = ["CA", "TX", "FL"][rng.gen_range(0..3)].to_string();
        filter.insert("propertyState".into(), json!(s.to_lowercase()));
        checks.push(Box::new(move |l| l["propertyState"] == s.as_str()));
    }
    if rng.gen_bool(p) {
        let ids = officers.clone();
        filter.insert("loanOfficerIds".into(), json!(ids));
        checks.push(Box::new(move |l| {
            ids.iter().any(|i| l["loanOfficerId"] == i.as_str())
        }));
    }
    if rng.gen_bool(p) {
        if let Some(r) = some_loan["referringAgentId"].as_str().map(str::to_string) {
            filter.insert("referringAgentId".into(), json!(r.to_uppercase()));
            checks.push(Box::new(move |l| l["referringAgentId"] == r.as_str()));
        }
    }
    if rng.gen_bool(p) {
        if let Some(r) = some_loan["processorId"].as_str().map(str::to_string) {
            filter.insert("processorId".into(), json!(r));
            checks.push(Box::new(move |l| l["processorId"] == r.as_str()));
        }
    }
    if rng.gen_bool(p) {
        let token = some_loan["borrowerLastName"]
            .as_str()
            .unwrap()
            .to_uppercase();
        filter.insert("searchText".into(), json!(format!("  {token} ")));
        let t = token.to_lowercase();
        checks.push(Box::new(move |l| {
            [
                "loanNumber",
                "borrowerFirstName",
                "borrowerLastName",
                "borrowerEmail",
            ]
            .iter()
            .filter_map(|k| l[*k].as_str())
            .any(|v| v.to_lowercase().contains(&t))
        }));
    }
    (
        Value::Object(filter),
        Box::new(move |l| checks.iter().all(|c| c(l))),
    )
}

#[tokio::test]
async fn random_role_combinations_and_filters_match_the_oracle() {
    use rand::seq::SliceRandom;
    use rand::{Rng, SeedableRng};
    for (seed, postgres) in [(21u64, false), (22, false), (23, true)] {
        // Arrange
        let mut w = world(seed, 400, postgres).await;
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let roles = [
            "Admin",
            "Processor",
            "ConciergeKey",
            "Agent",
            "DualLicensedAgent",
            "PreLicensed",
        ];
        let companies: Vec<String> = w
            .loans
            .iter()
            .filter_map(|l| l["companyId"].as_str().map(str::to_string))
            .collect();
        let officers: Vec<String> = w
            .loans
            .iter()
            .filter_map(|l| l["loanOfficerId"].as_str().map(str::to_string))
            .collect();
        let people: Vec<String> = w.agents.keys().cloned().collect();
        // Callers whose ids appear on loans (officers, assistants, referrers).
        let mut ids: Vec<String> = people
            .iter()
            .filter(|id| {
                w.loans.iter().any(|l| {
                    ["loanOfficerId", "loanAssistantId", "referringAgentId"]
                        .iter()
                        .any(|k| l[*k] == id.as_str())
                })
            })
            .cloned()
            .collect();
        ids.sort();

        let mut non_empty = 0;
        for round in 0..20 {
            // A real agent (so the Agent rules hit loans) given a random role combination.
            let id = ids.choose(&mut rng).unwrap().clone();
            let mut held: Vec<&str> = roles
                .iter()
                .copied()
                .filter(|r| rng.gen_bool(if *r == "Admin" { 0.1 } else { 0.35 }))
                .collect();
            if held.is_empty() {
                held.push(roles[rng.gen_range(1..roles.len())]);
            }
            let company = companies.choose(&mut rng).cloned();
            let managed_n = rng.gen_range(0..4);
            let managed: Vec<String> = officers
                .choose_multiple(&mut rng, managed_n)
                .cloned()
                .collect();
            let email = w.agents[&id]["email"].as_str().unwrap().to_string();
            let written = loanhost::data::NewAgent {
                id: id.clone(),
                email: email.clone(),
                company_id: company.clone(),
                roles: held.iter().map(|r| r.to_string()).collect(),
                managed_agent_ids: managed.clone(),
                ..Default::default()
            };
            w.app.db.upsert_agent(&written).await.unwrap();
            // PostgreSQL's directory sees the change once notified (docs/decisions/0013-the-agent-directory.md).
            w.app.until_directory_shows(&written).await;
            let agent = json!({"id": id, "email": email, "companyId": company, "roles": held, "managedAgentIds": managed});
            w.agents.insert(id.clone(), agent.clone());
            let (filter, keep) = random_filter(&mut rng, &w);
            let token = w.app.token_for(&email);
            let callable = held.iter().any(|r| DEFAULT_ROLES.contains(r));

            // Act
            let result = w.app.call_tool(&token, "query_echo", json!({"dataset": "loans", "groupBy": [{"field": "status"}], "aggregates": [["count", null], ["sum", "loanAmount"]], "filter": filter})).await;

            // Assert
            if !callable {
                assert_eq!(result["isError"], true, "{held:?} may not call the tool");
                continue;
            }
            assert_eq!(result["isError"], false, "{result}");
            let got: BTreeMap<String, (i64, Option<i128>)> = result["structuredContent"]["rows"]
                .as_array()
                .unwrap()
                .iter()
                .map(|row| {
                    (
                        row[0].as_str().unwrap().to_string(),
                        (row[1].as_i64().unwrap(), scaled(&row[2])),
                    )
                })
                .collect();
            let expected = oracle(&w, &agent, keep.as_ref());
            assert_eq!(
                got,
                expected,
                "{} seed {seed} round {round}: roles {held:?}, filter {filter}",
                engine(postgres)
            );
            non_empty += usize::from(!expected.is_empty());
        }
        assert!(
            non_empty >= 3,
            "seed {seed}: only {non_empty} rounds had loans to compare"
        );
    }
}

/// A count of distinct loans per (whole months or weeks, mapped or raw status) takes the period
/// sets (schema v4), alone organisation-wide or joined to the loans a filter keeps. Random maps,
/// windows (whole periods or not), filters and aggregates must equal the history read here
/// row by row, on both engines, with rows the sets must leave out or label by the fallback: a
/// loan that is not in the snapshot, and statuses outside the spec's list.
#[tokio::test]
async fn period_sets_equal_the_history_read_row_by_row() {
    use rand::seq::SliceRandom;
    use rand::{Rng, SeedableRng};
    use time::format_description::well_known::Rfc3339;
    use time::OffsetDateTime;
    for (seed, postgres) in [(31u64, false), (32, true)] {
        // Arrange: a seeded world, then history rows of a loan the snapshot does not have and
        // rows with unlisted statuses on loans it has.
        let mut w = world(seed, 300, postgres).await;
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let ghost = "0f0e0d0c-0000-4000-8000-00000000ffff";
        let mut extra = Vec::new();
        for (i, loan) in w.loans.iter().take(40).enumerate() {
            // Two loans the snapshot does not have: the first comes with the loans below; the
            // second never does, and has a status without a bit of its own (read per loan from
            // its sets when the raw status is the key).
            let (id, status) = if i % 4 == 0 {
                [
                    (ghost, "Loan Funded"),
                    (
                        "0f0e0d0c-0000-4000-8000-00000000fffe",
                        "Submitted to investor",
                    ),
                ][i / 4 % 2]
            } else {
                (
                    loan["id"].as_str().unwrap(),
                    ["Submitted to investor", "Loan Re-Opened"][i % 2],
                )
            };
            let at = epoch_ms("2026-03-15T12:00:00Z") - rng.gen_range(0..200i64) * 86_400_000;
            let at = OffsetDateTime::from_unix_timestamp_nanos(i128::from(at) * 1_000_000).unwrap();
            extra.push(
                json!({"loanId": id, "status": status, "occurredAt": at.format(&Rfc3339).unwrap()}),
            );
        }
        // And loans with two listed statuses in one period (a label holding both counts the
        // loan once there), on dates spread over the windows below.
        for (k, loan) in w.loans.iter().skip(40).take(20).enumerate() {
            let day = epoch_ms("2026-03-14T10:00:00Z") - k as i64 * 9 * 86_400_000;
            for (status, hour) in [("Loan Approved", 0), ("Loan Clear To Close", 3)] {
                extra.push(json!({"loanId": loan["id"], "status": status, "occurredAt": iso(day + hour * 3_600_000)}));
            }
        }
        let lines: Vec<String> = extra.iter().map(Value::to_string).collect();
        crate::helpers::import_lines(&w.app, "los_status_history.jsonl", &lines).await;
        w.history.extend(extra);
        // Then loans over that history: the ghost becomes a loan of the snapshot, and one
        // loan's amount changes (the import counts their periods' sets again, schema v7).
        let mut ghost_loan = w.loans[0].clone();
        ghost_loan["id"] = json!(ghost);
        ghost_loan["loanAmount"] = json!("250000.25");
        let mut changed = w.loans[1].clone();
        changed["loanAmount"] = json!("1234567.5");
        let lines = [ghost_loan.to_string(), changed.to_string()];
        crate::helpers::import_lines(&w.app, "loans.jsonl", &lines).await;
        w.loans[1] = changed;
        w.loans.push(ghost_loan);
        let admin = w.app.token_for("admin@demo.loanhost.local");
        let amounts: HashMap<&str, Option<i128>> = w
            .loans
            .iter()
            .map(|l| (l["id"].as_str().unwrap(), scaled(&l["loanAmount"])))
            .collect();
        let statuses: Vec<&str> = {
            let mut s: Vec<&str> = w
                .history
                .iter()
                .map(|h| h["status"].as_str().unwrap())
                .collect();
            s.sort();
            s.dedup();
            s.retain(|s| loanhost::data::history_keys::listed_bit(s).is_some());
            s
        };

        let unlisted_loans: std::collections::HashSet<&str> = w
            .history
            .iter()
            .filter(|h| {
                loanhost::data::history_keys::listed_bit(h["status"].as_str().unwrap()).is_none()
            })
            .map(|h| h["loanId"].as_str().unwrap())
            .collect();
        let mut non_empty = 0;
        let mut unlisted_seen = 0;
        let mut agent_raw = [0; 2];
        for round in 0..16 {
            // A third of the rounds key on the raw status instead (each listed status from the
            // sets, the unlisted ones from their history rows): over whole periods that hold
            // the unlisted rows, so that they take the sets.
            let raw = round % 3 == 2;
            // A window: whole periods or not, each bound inclusive or not. Raw rounds and
            // another third are whole periods, so that label maps take the sets too (with each
            // shape left to chance, whole periods came one round in eight, none in some runs).
            let whole = raw || round % 3 == 0;
            let week = rng.gen_bool(0.5);
            let day = 86_400_000_i64;
            let mut from = epoch_ms("2026-03-15T00:00:00Z") - rng.gen_range(0..420) * day;
            let mut to = from + rng.gen_range(1..240) * day;
            if raw {
                from = epoch_ms("2026-03-15T00:00:00Z") - rng.gen_range(200..420) * day;
                to = epoch_ms("2026-03-16T00:00:00Z") + rng.gen_range(0..60) * day;
            }
            // The raw round 14 (an Agent's without unlisted statuses, below) is one month.
            if round == 14 {
                from = epoch_ms("2026-02-01T00:00:00Z");
                to = epoch_ms("2026-03-01T00:00:00Z");
            }
            if whole || rng.gen_bool(0.5) {
                (from, to) = (period_start(from, week), period_start(to, week));
            } else {
                from += rng.gen_range(0..day);
                to += rng.gen_range(0..day);
            }
            let (low_op, lo) = if whole || rng.gen_bool(0.5) {
                ("ge", from)
            } else {
                ("gt", from + 1)
            };
            let (high_op, hi) = if whole || rng.gen_bool(0.5) {
                ("lt", to - 1)
            } else {
                ("le", to)
            };
            // A map: a few listed statuses (one of them twice), to labels that may repeat the
            // fallback's.
            let n = rng.gen_range(1..6).min(statuses.len());
            let mut pairs: Vec<(String, String)> = statuses
                .choose_multiple(&mut rng, n)
                .map(|s| {
                    (
                        s.to_string(),
                        ["A", "B", "Other"][rng.gen_range(0..3)].to_string(),
                    )
                })
                .collect();
            pairs.push((pairs[0].0.clone(), "B-second".into()));
            let otherwise = ["Other", "A"][rng.gen_range(0..2)];
            let status_key = if raw {
                json!({"field": "milestone"})
            } else {
                json!({"mapped": ["milestone", pairs, otherwise]})
            };
            // Half the rounds filter the loans: the sets are then joined to the loans kept.
            let officers: Option<Vec<String>> = rng.gen_bool(0.5).then(|| {
                w.loans
                    .choose_multiple(&mut rng, 60)
                    .filter_map(|l| l["loanOfficerId"].as_str().map(str::to_string))
                    .collect()
            });
            // The raw rounds 11 and 14 are an Agent's, unfiltered: the sets of the Agent's
            // loans are counted alone first; in round 11 some hold an unlisted status in the
            // window (its rows' statement answers), in round 14 none does (the sets do).
            let unlisted_here = |id: &str| {
                unlisted_loans.contains(id)
                    && w.history.iter().any(|h| {
                        h["loanId"] == id
                            && loanhost::data::history_keys::listed_bit(
                                h["status"].as_str().unwrap(),
                            )
                            .is_none()
                            && (lo..=hi).contains(&epoch_ms(h["occurredAt"].as_str().unwrap()))
                    })
            };
            let in_window = |id: &str| {
                w.history.iter().any(|h| {
                    h["loanId"] == id
                        && (lo..=hi).contains(&epoch_ms(h["occurredAt"].as_str().unwrap()))
                })
            };
            let agent_caller: Option<&Value> = (raw && (round == 11 || round == 14)).then(|| {
                let mut agents: Vec<&Value> = w
                    .agents
                    .values()
                    .filter(|a| {
                        let roles = a["roles"].as_array().unwrap();
                        let has = |r: &str| roles.iter().any(|x| x == r);
                        has("Agent") && !has("Admin") && !has("Processor")
                    })
                    .collect();
                agents.sort_by_key(|a| a["id"].as_str().unwrap().to_string());
                *agents
                    .iter()
                    .find(|a| {
                        let mine: Vec<&str> = w
                            .loans
                            .iter()
                            .filter(|l| visible(a, &w.agents, l))
                            .map(|l| l["id"].as_str().unwrap())
                            .collect();
                        let with_unlisted = mine.iter().any(|id| unlisted_here(id));
                        mine.iter().any(|id| in_window(id)) && with_unlisted == (round == 11)
                    })
                    .expect("an Agent with (round 11) or without (14) unlisted statuses")
            });
            let officers = officers.filter(|_| agent_caller.is_none());
            let filter = officers
                .as_ref()
                .map_or(json!(null), |o| json!({"loanOfficerIds": o}));
            let kept = |id: &str| {
                if let Some(a) = agent_caller {
                    return w
                        .loans
                        .iter()
                        .any(|l| l["id"] == id && visible(a, &w.agents, l));
                }
                officers.as_ref().is_none_or(|o| {
                    w.loans.iter().any(|l| {
                        l["id"] == id
                            && l["loanOfficerId"]
                                .as_str()
                                .is_some_and(|x| o.iter().any(|y| y == x))
                    })
                })
            };

            // Act
            let token = agent_caller.map_or(admin.clone(), |a| {
                w.app.token_for(a["email"].as_str().unwrap())
            });
            let r = w
                .app
                .call_ok(
                    &token,
                    "query_echo",
                    json!({
                        "dataset": "los-status-history",
                        "filter": filter,
                        "predicates": [["occurredAt", low_op, iso(from)], ["occurredAt", high_op, iso(to)]],
                        "groupBy": [{"period": ["occurredAt", if week { "week" } else { "month" }]}, status_key],
                        "distinctOn": "loanId",
                        "aggregates": [["count", null], ["sum", "loan.loanAmount"], ["min", "loan.loanAmount"], ["max", "loan.loanAmount"], ["countOf", "loan.loanAmount"]],
                        "limit": 5000
                    }),
                )
                .await;

            // Assert
            let mut cells: BTreeMap<(String, String), std::collections::BTreeSet<&str>> =
                BTreeMap::new();
            for h in &w.history {
                let id = h["loanId"].as_str().unwrap();
                let at_ms = epoch_ms(h["occurredAt"].as_str().unwrap());
                if !amounts.contains_key(id) || at_ms < lo || at_ms > hi || !kept(id) {
                    continue;
                }
                let period = label(at_ms, if week { "week" } else { "month" });
                let status = h["status"].as_str().unwrap();
                let label = if raw {
                    status
                } else {
                    pairs
                        .iter()
                        .find(|(v, _)| v == status)
                        .map_or(otherwise, |(_, l)| l.as_str())
                };
                cells
                    .entry((period, label.to_string()))
                    .or_default()
                    .insert(id);
            }
            type Row = (
                String,
                String,
                i64,
                Option<i128>,
                Option<i128>,
                Option<i128>,
                i64,
            );
            let want: Vec<Row> = cells
                .iter()
                .map(|((period, label), ids)| {
                    let known: Vec<i128> = ids.iter().filter_map(|id| amounts[id]).collect();
                    (
                        period.clone(),
                        label.clone(),
                        ids.len() as i64,
                        known.iter().copied().reduce(|a, b| a + b),
                        known.iter().copied().min(),
                        known.iter().copied().max(),
                        known.len() as i64,
                    )
                })
                .collect();
            let mut got: Vec<Row> = r["rows"]
                .as_array()
                .unwrap()
                .iter()
                .map(|row| {
                    (
                        row[0].as_str().unwrap().to_string(),
                        row[1].as_str().unwrap().to_string(),
                        row[2].as_i64().unwrap(),
                        scaled(&row[3]),
                        scaled(&row[4]),
                        scaled(&row[5]),
                        row[6].as_i64().unwrap(),
                    )
                })
                .collect();
            got.sort();
            non_empty += usize::from(!want.is_empty());
            let unlisted = raw
                && want
                    .iter()
                    .any(|r| loanhost::data::history_keys::listed_bit(&r.1).is_none());
            unlisted_seen += usize::from(unlisted);
            // An Agent's raw status first reads the sets of the Agent's loans alone; the
            // unlisted rows' statement answers when a set holds one.
            if agent_caller.is_some() && !want.is_empty() {
                agent_raw[usize::from(unlisted)] += 1;
            }
            assert_eq!(
                got,
                want,
                "{} round {round}: {pairs:?} / {otherwise}",
                engine(postgres)
            );
        }
        assert!(
            unlisted_seen >= 4,
            "{}: the raw status met unlisted statuses in only {unlisted_seen} rounds",
            engine(postgres)
        );
        assert!(
            agent_raw == [1, 1],
            "{}: an Agent's raw rounds without and with unlisted statuses: {agent_raw:?}",
            engine(postgres)
        );
        assert!(
            non_empty >= 12,
            "{}: only {non_empty} windows held rows",
            engine(postgres)
        );
    }
}
