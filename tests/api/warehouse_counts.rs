//! The warehouse report's distinct loans per (month or week, milestone) read from the counts
//! the import keeps (schema v8) for a window's whole periods and from the rows for its partial
//! ends: they must equal an oracle over the imported lines, on both engines, for windows whole
//! and not, after imports that add rows to counted periods (a loan's milestone again in the
//! same period, the same line twice, a new loan, a new milestone name).

use std::collections::{BTreeMap, BTreeSet};

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use crate::data::{epoch_ms as ms, iso, label, period_start};
use crate::helpers::{fixture_wasm, import_lines, manifest, seed_app, spawn_app_with, AppOptions};

async fn counts_equal_the_rows(postgres: bool, seed: u64) {
    // Arrange: a seeded warehouse, then more rows in periods already counted.
    // Org-wide, as the warehouse report is declared.
    let granted = manifest(
        "query_echo",
        &["Admin"],
        &["dw-loan-milestones"],
        64,
        10_000,
        4 * 1024 * 1024,
    )
    .replace("scope = \"caller\"", "scope = \"org-wide\"");
    let mut options =
        AppOptions::default().plugin("query_echo", fixture_wasm("query-echo"), granted);
    options.postgres = postgres;
    let app = spawn_app_with(options).await;
    let data = seed_app(&app, seed, 200).await;
    let mut rows: Vec<Value> = data.milestones.clone();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut extra = Vec::new();
    for i in 0..60 {
        let base = rows.choose(&mut rng).unwrap().clone();
        let at = ms(base["occurredAt"].as_str().unwrap()) + rng.gen_range(-20..20) * 86_400_000;
        let line = match i % 4 {
            // The same loan and milestone again, near the first.
            0 => {
                json!({"loanId": base["loanId"], "milestone": base["milestone"], "occurredAt": iso(at)})
            }
            // A line already imported.
            1 => base.clone(),
            // A loan the warehouse has not seen.
            2 => {
                json!({"loanId": format!("0f0e0d0c-0000-4000-8000-{:012}", 900 + i), "milestone": base["milestone"], "occurredAt": iso(at)})
            }
            // A milestone name of its own.
            _ => json!({"loanId": base["loanId"], "milestone": "Re-opened", "occurredAt": iso(at)}),
        };
        extra.push(line);
    }
    let lines: Vec<String> = extra.iter().map(Value::to_string).collect();
    import_lines(&app, "dw_loan_milestones.jsonl", &lines).await;
    rows.extend(extra);
    let admin = app.token_for("admin@demo.loanhost.local");
    let instants: Vec<i64> = rows
        .iter()
        .map(|r| ms(r["occurredAt"].as_str().unwrap()))
        .collect();
    let (first, last) = (
        *instants.iter().min().unwrap(),
        *instants.iter().max().unwrap(),
    );

    let mut whole_windows = 0;
    for round in 0..14 {
        // A window: all of the rows, or a random one; its ends at period starts or not.
        let week = round % 2 == 1;
        let day = 86_400_000_i64;
        let (mut lo, mut hi) = if round < 2 {
            (first - 400 * day, last + 400 * day)
        } else {
            let lo = rng.gen_range(first..last);
            (lo, lo + rng.gen_range(20..400) * day)
        };
        if round % 3 == 0 {
            // Whole periods: from the start of lo's period to the start of hi's.
            (lo, hi) = (period_start(lo, week), period_start(hi, week));
            whole_windows += 1;
        }

        // Act
        let r = app
            .call_ok(
                &admin,
                "query_echo",
                json!({
                    "dataset": "dw-loan-milestones",
                    "predicates": [["occurredAt", "ge", iso(lo)], ["occurredAt", "lt", iso(hi)]],
                    "groupBy": [{"period": ["occurredAt", if week { "week" } else { "month" }]}, {"field": "milestone"}],
                    "aggregates": [["countDistinct", "loanId"]],
                    "limit": 5000
                }),
            )
            .await;

        // Assert
        let mut cells: BTreeMap<(String, String), BTreeSet<&str>> = BTreeMap::new();
        for (row, at) in rows.iter().zip(&instants) {
            if *at < lo || *at >= hi {
                continue;
            }
            cells
                .entry((
                    label(*at, if week { "week" } else { "month" }),
                    row["milestone"].as_str().unwrap().to_string(),
                ))
                .or_default()
                .insert(row["loanId"].as_str().unwrap());
        }
        let want: Vec<(String, String, i64)> = cells
            .into_iter()
            .map(|((p, m), ids)| (p, m, ids.len() as i64))
            .collect();
        let mut got: Vec<(String, String, i64)> = r["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| {
                (
                    row[0].as_str().unwrap().to_string(),
                    row[1].as_str().unwrap().to_string(),
                    row[2].as_i64().unwrap(),
                )
            })
            .collect();
        got.sort();
        assert!(!want.is_empty() || round >= 2, "round {round}: no rows");
        assert_eq!(
            got,
            want,
            "round {round} (week: {week}) {} .. {}",
            iso(lo),
            iso(hi)
        );
    }
    assert!(whole_windows >= 4);
}

#[tokio::test]
async fn sqlite_counts_equal_the_rows() {
    counts_equal_the_rows(false, 41).await;
}

#[tokio::test]
async fn postgres_counts_equal_the_rows() {
    counts_equal_the_rows(true, 42).await;
}
