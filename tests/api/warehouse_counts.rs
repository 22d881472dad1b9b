//! The warehouse's counts the import keeps per (month or week, key) — distinct loans per
//! milestone (schema v8), deals per stage (schema v10) — read for a window's whole periods, and
//! the rows for its partial ends: they must equal an oracle over the imported lines, on both
//! engines, for windows whole and not (and open at the start, as the pipeline's all history
//! is), after imports that change counted periods (a loan's milestone again in the same
//! period, the same line twice, a new loan, a new milestone name; a deal moved to another
//! period or stage, a deal twice in one file, a new deal).

use std::collections::{BTreeMap, BTreeSet};

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use crate::data::{epoch_ms as ms, iso, label, period_start};
use crate::helpers::{
    fixture_wasm, import_lines, manifest, seed_app, spawn_app_with, AppOptions, TestApp,
};

const DAY: i64 = 86_400_000;

/// An app whose query-echo plugin reads `dataset` organisation-wide (as the warehouse reports
/// are declared), seeded with 200 loans.
async fn app_reading(
    dataset: &str,
    postgres: bool,
    seed: u64,
) -> (TestApp, crate::helpers::SeededData) {
    let granted = manifest(
        "query_echo",
        &["Admin"],
        &[dataset],
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
    (app, data)
}

/// What a dataset's counts are of: its name and the fields of the instant, the key and the
/// counted value.
struct Counted {
    dataset: &'static str,
    at: &'static str,
    key: &'static str,
    counted: &'static str,
}

/// Asks for the distinct counted values per (period, key) over 14 windows (all of the rows
/// and open at the start in the first two, random ones after, a third of them whole periods)
/// and compares each answer with the oracle over `rows` ((instant, key, counted value)).
async fn windows_equal_the_rows(
    app: &TestApp,
    c: &Counted,
    rows: &[(i64, String, String)],
    rng: &mut StdRng,
) {
    let admin = app.token_for("admin@demo.loanhost.local");
    let first = rows.iter().map(|r| r.0).min().unwrap();
    let last = rows.iter().map(|r| r.0).max().unwrap();
    let mut whole_windows = 0;
    for round in 0..14 {
        // A window: all of the rows (open at the start), or a random one; its ends at period
        // starts or not.
        let week = round % 2 == 1;
        let (mut lo, mut hi) = if round < 2 {
            (i64::MIN, last + 400 * DAY)
        } else {
            let lo = rng.gen_range(first..last);
            (lo, lo + rng.gen_range(20..400) * DAY)
        };
        if round % 3 == 0 {
            // Whole periods: from the start of lo's period to the start of hi's.
            if lo != i64::MIN {
                lo = period_start(lo, week);
            }
            hi = period_start(hi, week);
            whole_windows += 1;
        }
        let mut predicates = vec![json!([c.at, "lt", iso(hi)])];
        if lo != i64::MIN {
            predicates.push(json!([c.at, "ge", iso(lo)]));
        }
        let unit = if week { "week" } else { "month" };

        // Act
        let r = app
            .call_ok(
                &admin,
                "query_echo",
                json!({
                    "dataset": c.dataset,
                    "predicates": predicates,
                    "groupBy": [{"period": [c.at, unit]}, {"field": c.key}],
                    "aggregates": [["countDistinct", c.counted]],
                    "limit": 5000
                }),
            )
            .await;

        // Assert
        let mut cells: BTreeMap<(String, String), BTreeSet<&str>> = BTreeMap::new();
        for (at, key, counted) in rows {
            if *at >= lo && *at < hi {
                cells
                    .entry((label(*at, unit), key.clone()))
                    .or_default()
                    .insert(counted);
            }
        }
        let want: Vec<(String, String, i64)> = cells
            .into_iter()
            .map(|((p, k), values)| (p, k, values.len() as i64))
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
            "{} round {round} (week: {week}) {lo} .. {}",
            c.dataset,
            iso(hi)
        );
    }
    assert!(whole_windows >= 4);
}

async fn milestone_counts_equal_the_rows(postgres: bool, seed: u64) {
    // Arrange: a seeded warehouse, then more rows in periods already counted.
    let (app, data) = app_reading("dw-loan-milestones", postgres, seed).await;
    let mut rows: Vec<Value> = data.milestones.clone();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut extra = Vec::new();
    for i in 0..60 {
        let base = rows.choose(&mut rng).unwrap().clone();
        let at = ms(base["occurredAt"].as_str().unwrap()) + rng.gen_range(-20..20) * DAY;
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
    let rows: Vec<(i64, String, String)> = rows
        .iter()
        .map(|r| {
            (
                ms(r["occurredAt"].as_str().unwrap()),
                r["milestone"].as_str().unwrap().to_string(),
                r["loanId"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let c = Counted {
        dataset: "dw-loan-milestones",
        at: "occurredAt",
        key: "milestone",
        counted: "loanId",
    };

    // Act / Assert
    windows_equal_the_rows(&app, &c, &rows, &mut rng).await;
}

async fn deal_counts_follow_the_deals(postgres: bool, seed: u64) {
    // Arrange: seeded deals, then a file that moves some to other periods or stages (one of
    // them twice: its last line counts), and brings new ones.
    let (app, data) = app_reading("dw-deals", postgres, seed).await;
    let mut deals: BTreeMap<String, (i64, String)> = data
        .deals
        .iter()
        .map(|d| {
            let id = d["id"].as_str().unwrap().to_string();
            (
                id,
                (
                    ms(d["createdAt"].as_str().unwrap()),
                    d["stage"].as_str().unwrap().to_string(),
                ),
            )
        })
        .collect();
    // The seed makes a deal per 40 loans: 300 more over three years first, in its stages.
    let mut stages: Vec<String> = deals.values().map(|(_, s)| s.clone()).collect();
    stages.extend(["Lead", "Application", "Funded"].map(String::from));
    let mut rng = StdRng::seed_from_u64(seed);
    let today = ms(&format!("{}T00:00:00Z", crate::helpers::TODAY));
    let mut lines = Vec::new();
    for i in 0..300 {
        let at = today - rng.gen_range(0..3 * 365 * DAY);
        let stage = stages.choose(&mut rng).unwrap().clone();
        lines.push(
            json!({"id": format!("deal-{i}"), "createdAt": iso(at), "stage": stage}).to_string(),
        );
        deals.insert(format!("deal-{i}"), (at, stage));
    }
    import_lines(&app, "dw_deals.jsonl", &lines).await;
    let ids: Vec<String> = deals.keys().cloned().collect();
    let mut lines = Vec::new();
    for i in 0..60 {
        let id = ids.choose(&mut rng).unwrap().clone();
        let (at, stage) = deals[&id].clone();
        let other_stage = stages.choose(&mut rng).unwrap().clone();
        let (id, at, stage) = match i % 4 {
            // Created in another period (weeks to a year away), the same stage.
            0 => (
                id,
                at + rng.gen_range(10..365) * DAY * if i % 8 == 0 { -1 } else { 1 },
                stage,
            ),
            // Another stage, the same instant.
            1 => (id, at, other_stage),
            // A deal the warehouse has not seen.
            2 => (
                format!("deal-new-{i}"),
                at + rng.gen_range(-30..30) * DAY,
                other_stage,
            ),
            // Twice in the file: moved, then moved again with a stage of its own.
            _ => {
                let moved = at + rng.gen_range(40..90) * DAY;
                lines.push(json!({"id": id, "createdAt": iso(moved), "stage": stage}).to_string());
                (id, moved + 7 * DAY, "Re-opened".to_string())
            }
        };
        lines.push(json!({"id": id, "createdAt": iso(at), "stage": stage}).to_string());
        deals.insert(id, (at, stage));
    }
    import_lines(&app, "dw_deals.jsonl", &lines).await;
    let rows: Vec<(i64, String, String)> = deals
        .into_iter()
        .map(|(id, (at, stage))| (at, stage, id))
        .collect();
    let c = Counted {
        dataset: "dw-deals",
        at: "createdAt",
        key: "stage",
        counted: "id",
    };

    // Act / Assert
    windows_equal_the_rows(&app, &c, &rows, &mut rng).await;
}

#[tokio::test]
async fn sqlite_counts_equal_the_rows() {
    milestone_counts_equal_the_rows(false, 41).await;
}

#[tokio::test]
async fn postgres_counts_equal_the_rows() {
    milestone_counts_equal_the_rows(true, 42).await;
}

#[tokio::test]
async fn sqlite_deal_counts_follow_the_deals() {
    deal_counts_follow_the_deals(false, 43).await;
}

#[tokio::test]
async fn postgres_deal_counts_follow_the_deals() {
    deal_counts_follow_the_deals(true, 44).await;
}
