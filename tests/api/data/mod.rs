//! The `data` capability end to end through a real component (`query_echo`): counts and sums
//! for callers of every role equal a naive in-memory oracle that applies the scope table
//! first; hostile strings are data, never SQL; name fields are refused to non-readers.

mod filters;
mod periods;
mod sets;
mod world;

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Value};

pub use periods::{epoch_ms, iso, label, period_start};
pub use world::{
    aggregates_of, query_echo_manifest, query_echo_options, scaled, visible, world, World,
};
use world::{by_status, engine, oracle, LoanPredicate, ENGINES};

#[test]
fn scaled_reads_signs_and_fractions() {
    assert_eq!(scaled(&json!(-12.5)), Some(-125_000));
    assert_eq!(scaled(&json!("-0.0001")), Some(-1));
    assert_eq!(scaled(&json!(350000.25)), Some(3_500_002_500));
    assert_eq!(scaled(&json!("100")), Some(1_000_000));
    assert_eq!(scaled(&Value::Null), None);
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
