//! The data capability's world: the `query_echo` component and its manifest, a seeded app on
//! either engine, and the naive oracle of counts and sums per status that applies the scope table
//! first.

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
pub(super) const ENGINES: [bool; 2] = [false, true];

pub(super) fn engine(postgres: bool) -> &'static str {
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
pub(super) type LoanPredicate = Box<dyn Fn(&Value) -> bool>;

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
pub(super) async fn by_status(
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

pub(super) fn oracle(
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
