//! The snapshot's totals per value of a group key (schema v11; per company, schema v12), read
//! for an organisation-wide report and a Processor's (one company's loans) without a filter:
//! they must equal the loans read row by row (the statement a distinct-on forces) and an
//! oracle over the imported lines, on both engines, for every table's key, after imports that
//! move loans between key values (status, type, purpose, company, an officer or referrer and
//! their names, a date's month), set and clear amounts and keys, add loans, and write one loan
//! twice in a file.

use std::collections::{BTreeMap, HashMap};

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use crate::data::{aggregates_of, iso, scaled, visible, world, World};
use crate::helpers::{import_lines, TestApp};

const AMOUNTS: [&str; 3] = ["loanAmount", "lockedCompensation", "estimatedCompensation"];
const DATES: [&str; 3] = ["statusDate", "estimatedClosingDate", "updated"];
const DAY: i64 = 86_400_000;

/// A group's key texts and its five aggregates (count, count of the amount, sum, min, max).
type Row = (
    Vec<String>,
    i64,
    i64,
    Option<i128>,
    Option<i128>,
    Option<i128>,
);

fn rows_of(r: &Value, keys: usize) -> Vec<Row> {
    let mut rows: Vec<Row> = r["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let key = (0..keys)
                .map(|i| row[i].as_str().unwrap_or("<null>").to_string())
                .collect();
            (
                key,
                row[keys].as_i64().unwrap(),
                row[keys + 1].as_i64().unwrap(),
                scaled(&row[keys + 2]),
                scaled(&row[keys + 3]),
                scaled(&row[keys + 4]),
            )
        })
        .collect();
    rows.sort();
    rows
}

/// The values `field` takes among `loans` (nulls left out).
fn seen(loans: &[Value], field: &str) -> Vec<Value> {
    let mut values: Vec<Value> = loans
        .iter()
        .map(|l| l[field].clone())
        .filter(|v| !v.is_null())
        .collect();
    values.sort_by_key(Value::to_string);
    values.dedup();
    values
}

/// Moves a loan to other key values, each with a chance: another status, type, purpose or
/// company (or none), another officer or referrer with their name, the same one renamed,
/// none; amounts set or cleared; dates moved or cleared.
fn move_loan(loan: &mut Value, seeded: &[Value], rng: &mut StdRng, n: usize) {
    for field in ["status", "loanType", "purpose", "companyId"] {
        if rng.gen_bool(0.4) {
            let values = seen(seeded, field);
            loan[field] = match field {
                "status" => values.choose(rng).unwrap().clone(),
                _ if rng.gen_bool(0.2) => Value::Null,
                _ => values.choose(rng).unwrap().clone(),
            };
        }
    }
    for (id, name) in [
        ("loanOfficerId", "loanOfficerName"),
        ("referringAgentId", "referringAgentName"),
    ] {
        match rng.gen_range(0..6) {
            0 => {
                let other = seeded.choose(rng).unwrap();
                loan[id] = other[id].clone();
                loan[name] = other[name].clone();
            }
            1 if !loan[id].is_null() => loan[name] = json!(format!("Renamed {n}")),
            2 => {
                loan[id] = Value::Null;
                loan[name] = Value::Null;
            }
            _ => {}
        }
    }
    for amount in AMOUNTS {
        match rng.gen_range(0..5) {
            0 => loan[amount] = Value::Null,
            1 => {
                loan[amount] = json!(format!(
                    "{}.{:04}",
                    rng.gen_range(0..900_000),
                    rng.gen_range(0..10_000)
                ))
            }
            _ => {}
        }
    }
    for date in DATES {
        match rng.gen_range(0..5) {
            0 => loan[date] = Value::Null,
            1 => {
                let at =
                    crate::data::epoch_ms("2026-06-15T12:00:00Z") + rng.gen_range(-500..200) * DAY;
                loan[date] = json!(iso(at));
            }
            _ => {}
        }
    }
}

/// The shapes a report asks the totals for: (group-by, predicates, key fields the oracle
/// reads, or none for a key it does not model).
fn shapes() -> Vec<(Value, Value, Option<Vec<&'static str>>)> {
    let field = |f: &str| json!({"field": f});
    let mut shapes = vec![
        (json!([]), json!([]), Some(vec![])),
        (json!([field("status")]), json!([]), Some(vec!["status"])),
        (
            json!([field("loanType")]),
            json!([]),
            Some(vec!["loanType"]),
        ),
        (json!([field("purpose")]), json!([]), Some(vec!["purpose"])),
        (
            json!([field("loanOfficerId"), field("loanOfficerName")]),
            json!([]),
            Some(vec!["loanOfficerId", "loanOfficerName"]),
        ),
        (
            json!([field("loanOfficerId")]),
            json!([]),
            Some(vec!["loanOfficerId"]),
        ),
        (
            json!([field("referringAgentId"), field("referringAgentName")]),
            json!([]),
            Some(vec!["referringAgentId", "referringAgentName"]),
        ),
        (
            json!([field("referringAgentName")]),
            json!([]),
            Some(vec!["referringAgentName"]),
        ),
        (
            json!([{"mapped": ["status", [["Loan Open", "Open"], ["Loan Funded", "Done"], ["Loan Closed", "Done"]], "Other"]}]),
            json!([]),
            None,
        ),
    ];
    for date in DATES {
        for unit in ["month", "quarter", "year"] {
            shapes.push((
                json!([{"period": [date, unit]}]),
                json!([[date, "isNotNull", null]]),
                None,
            ));
        }
        shapes.push((
            json!([{"period": [date, "month"]}]),
            json!([
                [date, "ge", "2026-01-01T00:00:00Z"],
                [date, "lt", "2026-07-01T00:00:00Z"]
            ]),
            None,
        ));
        shapes.push((
            json!([]),
            json!([[date, "ge", "2026-03-01T00:00:00Z"]]),
            None,
        ));
    }
    shapes
}

/// The callers whose scopes the totals count: the Admin (every loan) and the Processor (the
/// loans of their company and nothing else), as the directory holds them.
fn callers(w: &World) -> Vec<Value> {
    let agent = |email: &str| {
        w.agents
            .values()
            .find(|a| a["email"] == email)
            .unwrap_or_else(|| panic!("the demo {email}"))
            .clone()
    };
    let processor = agent("processor@demo.loanhost.local");
    assert_eq!(processor["roles"], json!(["Processor"]));
    vec![agent("admin@demo.loanhost.local"), processor]
}

/// Every shape, over a random amount, for each caller: the totals' answer equals the rows'
/// and, where it models the key, the oracle's over the `loans` the caller sees (docs/design.md §5,
/// `visible`).
async fn totals_equal_the_rows(
    app: &TestApp,
    callers: &[Value],
    agents: &HashMap<String, Value>,
    loans: &BTreeMap<String, Value>,
    what: &str,
    rng: &mut StdRng,
) {
    for caller in callers {
        let email = caller["email"].as_str().unwrap();
        let seen: Vec<&Value> = loans
            .values()
            .filter(|l| visible(caller, agents, l))
            .collect();
        let what = format!("{what}, {email} ({} loans)", seen.len());
        shapes_equal_the_rows(app, &app.token_for(email), &seen, &what, rng).await;
    }
}

async fn shapes_equal_the_rows(
    app: &TestApp,
    token: &str,
    loans: &[&Value],
    what: &str,
    rng: &mut StdRng,
) {
    for (group_by, predicates, oracle_keys) in shapes() {
        let amount = *AMOUNTS.choose(rng).unwrap();
        let keys = group_by.as_array().unwrap().len();
        let query = |distinct: bool| {
            json!({
                "dataset": "loans",
                "predicates": predicates,
                "groupBy": group_by,
                "distinctOn": if distinct { json!("id") } else { json!(null) },
                "aggregates": [["count", null], ["countOf", amount], ["sum", amount], ["min", amount], ["max", amount]],
                "limit": 5000
            })
        };

        // Act
        let totals = app.call_ok(token, "query_echo", query(false)).await;
        let row_by_row = app.call_ok(token, "query_echo", query(true)).await;

        // Assert
        let shape = format!("{what}: {group_by} {predicates} {amount}");
        let got = rows_of(&totals, keys);
        assert!(!got.is_empty(), "{shape}");
        assert_eq!(got, rows_of(&row_by_row, keys), "{shape}");
        if let Some(fields) = oracle_keys {
            let mut groups: BTreeMap<Vec<String>, Vec<Option<i128>>> = BTreeMap::new();
            for loan in loans {
                let key = fields
                    .iter()
                    .map(|f| loan[*f].as_str().unwrap_or("<null>").to_string())
                    .collect();
                groups.entry(key).or_default().push(scaled(&loan[amount]));
            }
            let want: Vec<Row> = groups
                .into_iter()
                .map(|(k, v)| {
                    let (n, known, sum, min, max) = aggregates_of(&v);
                    (k, n, known, sum, min, max)
                })
                .collect();
            assert_eq!(got, want, "{shape} (oracle)");
        }
    }
}

async fn totals_follow_the_loans(postgres: bool, seed: u64) {
    // Arrange: a seeded world (its totals counted by a first import).
    let w = world(seed, 200, postgres).await;
    let callers = callers(&w);
    let World {
        app,
        agents,
        loans: seeded,
        ..
    } = w;
    let mut rng = StdRng::seed_from_u64(seed);
    let mut loans: BTreeMap<String, Value> = seeded
        .iter()
        .map(|l| (l["id"].as_str().unwrap().to_string(), l.clone()))
        .collect();
    let engine = if postgres { "postgres" } else { "sqlite" };
    totals_equal_the_rows(
        &app,
        &callers,
        &agents,
        &loans,
        &format!("{engine}, seeded"),
        &mut rng,
    )
    .await;

    for round in 0..2 {
        // Arrange: 60 loans moved, 15 new ones, one loan twice in the file (the last wins).
        let ids: Vec<String> = loans.keys().cloned().collect();
        let mut lines = Vec::new();
        for (n, id) in ids.choose_multiple(&mut rng, 60).enumerate() {
            let mut loan = loans[id].clone();
            move_loan(&mut loan, &seeded, &mut rng, n);
            lines.push(loan.to_string());
            loans.insert(id.clone(), loan);
        }
        for n in 0..15 {
            let mut loan = seeded.choose(&mut rng).unwrap().clone();
            let id = format!("70a1e000-0000-4000-8000-{round:04}{n:08}");
            loan["id"] = json!(id);
            move_loan(&mut loan, &seeded, &mut rng, 100 + n);
            lines.push(loan.to_string());
            loans.insert(id, loan);
        }
        let twice = ids.choose(&mut rng).unwrap();
        let mut first = loans[twice].clone();
        move_loan(&mut first, &seeded, &mut rng, 200);
        let mut last = loans[twice].clone();
        last["status"] = json!("Loan Funded");
        last["loanOfficerName"] = json!(format!("Twice {round}"));
        lines.push(first.to_string());
        lines.push(last.to_string());
        loans.insert(twice.clone(), last);

        // Act
        import_lines(&app, "loans.jsonl", &lines).await;

        // Assert
        totals_equal_the_rows(
            &app,
            &callers,
            &agents,
            &loans,
            &format!("{engine}, import {round}"),
            &mut rng,
        )
        .await;
    }
}

#[tokio::test]
async fn sqlite_totals_follow_the_loans() {
    totals_follow_the_loans(false, 61).await;
}

#[tokio::test]
async fn postgres_totals_follow_the_loans() {
    totals_follow_the_loans(true, 62).await;
}
