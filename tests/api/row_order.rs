//! The order a query's rows come back in, on both engines: keys ascending with nulls last and
//! text by its bytes (SQLite's `BINARY`, `COLLATE "C"` on PostgreSQL, the host's fold), and a
//! requested order first, its ties broken the same way; a limit cuts that order.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::data::{world, World};

/// Keys ascending, text by its bytes, `None` (null) last.
fn key_order(a: &Option<String>, b: &Option<String>) -> Ordering {
    match (a, b) {
        (Some(x), Some(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

#[tokio::test]
async fn rows_come_in_key_order_with_nulls_last_and_a_limit_cuts_the_requested_order() {
    for postgres in [false, true] {
        // Arrange: seeded loans, some without a referring agent.
        let World { app, loans, .. } = world(23, 300, postgres).await;
        let admin = app.token_for("admin@demo.loanhost.local");
        let mut counts: BTreeMap<Option<String>, i64> = BTreeMap::new();
        for l in &loans {
            let referrer = l["referringAgentId"].as_str().map(str::to_string);
            *counts.entry(referrer).or_default() += 1;
        }
        assert!(
            counts.contains_key(&None),
            "the seed has loans without a referrer"
        );
        let mut by_key: Vec<(Option<String>, i64)> = counts.into_iter().collect();
        by_key.sort_by(|a, b| key_order(&a.0, &b.0));
        let mut by_count = by_key.clone();
        by_count.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| key_order(&a.0, &b.0)));
        by_count.truncate(7);
        let rows = |r: &Value| -> Vec<(Option<String>, i64)> {
            r["rows"]
                .as_array()
                .unwrap()
                .iter()
                .map(|row| {
                    (
                        row[0].as_str().map(str::to_string),
                        row[1].as_i64().unwrap(),
                    )
                })
                .collect()
        };

        // Act
        let keyed = app
            .call_ok(
                &admin,
                "query_echo",
                json!({"dataset": "loans", "groupBy": [{"field": "referringAgentId"}], "aggregates": [["count", null]]}),
            )
            .await;
        let counted = app
            .call_ok(
                &admin,
                "query_echo",
                json!({"dataset": "loans", "groupBy": [{"field": "referringAgentId"}], "aggregates": [["count", null]], "orderBy": [[1, true]], "limit": 7}),
            )
            .await;

        // Assert
        let engine = if postgres { "postgres" } else { "sqlite" };
        assert_eq!(rows(&keyed), by_key, "{engine}: keys ascending, nulls last");
        assert_eq!(
            rows(&counted),
            by_count,
            "{engine}: count descending, then keys"
        );
    }
}
