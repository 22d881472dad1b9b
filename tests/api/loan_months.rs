//! Month, quarter and year keys over the snapshot's dates group by the month index the import
//! stores beside each date (schema v6) and label the groups, and weeks group by the integer
//! week: they must equal the dates read row by row (the statement a distinct-on forces) and
//! an oracle over the imported lines, on both engines, for dates at week, month, quarter and
//! year edges, before 1970, missing, and moved by a later import.

use std::collections::BTreeMap;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use time::OffsetDateTime;

use crate::data::{aggregates_of, epoch_ms as ms, iso, label, query_echo_manifest, scaled};
use crate::helpers::{fixture_wasm, import_lines, seed_app, spawn_app_with, AppOptions};

const FIELDS: [&str; 3] = ["statusDate", "estimatedClosingDate", "updated"];
const AMOUNTS: [&str; 3] = ["loanAmount", "lockedCompensation", "estimatedCompensation"];

/// Dates at the edges the labels must get right (UTC).
const EDGES: [&str; 12] = [
    "1969-12-31T23:59:59.999Z",
    "1970-01-01T00:00:00Z",
    "0001-02-03T04:05:06Z",
    "2025-12-31T23:59:59.999Z",
    "2026-01-01T00:00:00Z",
    "2026-03-31T23:59:59.999Z",
    "2026-04-01T00:00:00Z",
    "2026-06-30T23:59:59.999Z",
    "2026-07-01T00:00:00.001Z",
    "2027-02-28T12:00:00+05:00",
    "2026-12-28T00:00:00Z",
    "2027-01-03T23:59:59.999Z",
];

/// The first instant of the month holding `ms`, `k` months on.
fn month_start(ms: i64, k: i32) -> i64 {
    let t = OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).unwrap();
    let n = t.year() * 12 + i32::from(u8::from(t.month())) - 1 + k;
    let d = time::Date::from_calendar_date(
        n.div_euclid(12),
        time::Month::try_from((n.rem_euclid(12) + 1) as u8).unwrap(),
        1,
    )
    .unwrap();
    (d.midnight().assume_utc().unix_timestamp_nanos() / 1_000_000) as i64
}

type Row = (String, i64, i64, Option<i128>, Option<i128>, Option<i128>);

fn rows_of(r: &Value) -> Vec<Row> {
    let mut rows: Vec<Row> = r["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row[0].as_str().unwrap_or("<null>").to_string(),
                row[1].as_i64().unwrap(),
                row[2].as_i64().unwrap(),
                scaled(&row[3]),
                scaled(&row[4]),
                scaled(&row[5]),
            )
        })
        .collect();
    rows.sort();
    rows
}

#[tokio::test]
async fn stored_months_equal_the_dates_read_row_by_row() {
    for (seed, postgres) in [(41u64, false), (42, true)] {
        // Arrange: a seeded world, loans of the Agent's with dates at the edges (some
        // missing), then a second import that moves some of them to other months.
        let mut options = AppOptions::default().plugin(
            "query_echo",
            fixture_wasm("query-echo"),
            query_echo_manifest(),
        );
        options.postgres = postgres;
        let app = spawn_app_with(options).await;
        let data = seed_app(&app, seed, 200).await;
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let agent_id = data
            .agents
            .values()
            .find(|a| a["email"] == "agent@demo.loanhost.local")
            .unwrap()["id"]
            .clone();
        let mut extra = Vec::new();
        for (i, template) in data.loans.iter().take(40).enumerate() {
            let mut loan = template.clone();
            loan["id"] = json!(format!("5a1e0000-0000-4000-8000-{i:012}"));
            loan["loanOfficerId"] = agent_id.clone();
            for (j, field) in FIELDS.iter().enumerate() {
                loan[*field] = match (i + j) % 12 {
                    10 => Value::Null,
                    11 => json!(iso(ms(EDGES[i % EDGES.len()]) + 86_400_000 * 40)),
                    k => json!(EDGES[(k + i) % EDGES.len()]),
                };
            }
            extra.push(loan);
        }
        let first: Vec<String> = extra.iter().map(Value::to_string).collect();
        import_lines(&app, "loans.jsonl", &first).await;
        for loan in extra.iter_mut().step_by(3) {
            loan["statusDate"] = json!("2026-05-31T23:59:59Z");
            loan["updated"] = Value::Null;
            loan["estimatedClosingDate"] = json!("2024-02-29T00:00:00Z");
            loan["loanAmount"] = json!(rng.gen_range(1..9_000_000));
        }
        let second: Vec<String> = extra.iter().step_by(3).map(Value::to_string).collect();
        import_lines(&app, "loans.jsonl", &second).await;
        // The loans as the snapshot holds them: the last line of each id.
        let mut loans: BTreeMap<String, &Value> = BTreeMap::new();
        for loan in data.loans.iter().chain(&extra) {
            loans.insert(loan["id"].as_str().unwrap().to_string(), loan);
        }
        let admin = app.token_for("admin@demo.loanhost.local");
        let agent = app.token_for("agent@demo.loanhost.local");

        let mut non_empty = 0;
        for round in 0..36 {
            let field = FIELDS[round % 3];
            let unit = ["month", "quarter", "year", "week"][(round / 3) % 4];
            let amount = *AMOUNTS.choose(&mut rng).unwrap();
            let as_admin = round % 4 != 3;
            // No predicate, only the null check (report_loans), a window of whole months
            // (the index's range), or a window that is not (the dates' own predicates), each
            // around a loan's date so that the months at its ends hold loans.
            let dated: Vec<i64> = loans
                .values()
                .filter_map(|l| l[field].as_str().map(ms))
                .collect();
            let centre = *dated.choose(&mut rng).unwrap();
            let window = match round % 4 {
                0 => None,
                1 => Some((None, None)),
                _ => {
                    let lo = month_start(centre, -rng.gen_range(0..3));
                    let hi = month_start(centre, rng.gen_range(1..3));
                    Some(match rng.gen_range(0..3) {
                        0 => (Some(("ge", lo)), Some(("lt", hi))),
                        1 => (Some(("gt", lo)), Some(("le", hi))),
                        // Just after a loan's instant (the loan out, its month's earlier
                        // loans out), and just before a month's start.
                        _ => (Some(("ge", centre + 1)), Some(("lt", hi - 5))),
                    })
                }
            };
            let mut predicates = vec![];
            let (mut lo, mut hi) = (i64::MIN, i64::MAX);
            if window.is_some() {
                predicates.push(json!([field, "isNotNull", null]));
            }
            if let Some((Some((op_lo, l)), Some((op_hi, h)))) = window {
                predicates.push(json!([field, op_lo, iso(l)]));
                predicates.push(json!([field, op_hi, iso(h)]));
                lo = if op_lo == "gt" { l + 1 } else { l };
                hi = if op_hi == "lt" { h - 1 } else { h };
            }
            let query = |distinct: bool| {
                json!({
                    "dataset": "loans",
                    "predicates": predicates,
                    "groupBy": [{"period": [field, unit]}],
                    "distinctOn": if distinct { json!("id") } else { json!(null) },
                    "aggregates": [["count", null], ["countOf", amount], ["sum", amount], ["min", amount], ["max", amount]],
                    "limit": 5000
                })
            };
            let token = if as_admin { &admin } else { &agent };

            // Act
            let stored = app.call_ok(token, "query_echo", query(false)).await;
            let row_by_row = app.call_ok(token, "query_echo", query(true)).await;

            // Assert
            let what = format!(
                "{} round {round}: {field} by {unit}, {amount}, {} {predicates:?}",
                if postgres { "postgres" } else { "sqlite" },
                if as_admin { "admin" } else { "agent" }
            );
            assert_eq!(rows_of(&stored), rows_of(&row_by_row), "{what}");
            if as_admin {
                let mut want: BTreeMap<String, Vec<Option<i128>>> = BTreeMap::new();
                for loan in loans.values() {
                    let at = loan[field].as_str().map(ms);
                    let kept = match at {
                        None => window.is_none(),
                        Some(at) => (lo..=hi).contains(&at),
                    };
                    if kept {
                        let key = at.map_or("<null>".into(), |at| label(at, unit));
                        want.entry(key).or_default().push(scaled(&loan[amount]));
                    }
                }
                let want: Vec<Row> = want
                    .into_iter()
                    .map(|(k, v)| {
                        let (n, known, sum, min, max) = aggregates_of(&v);
                        (k, n, known, sum, min, max)
                    })
                    .collect();
                assert_eq!(rows_of(&stored), want, "{what}");
            }
            non_empty += usize::from(rows_of(&stored).len() > 1);
        }
        assert!(
            non_empty >= 27,
            "only {non_empty} rounds had several groups"
        );
    }
}
