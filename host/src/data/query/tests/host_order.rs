//! The host's order of a statement's groups (`HostOrder`) against the order, count, limit and
//! totals the engines give the same groups (`engine_order`), on both engines: ties, NULL keys
//! and aggregates, text that a locale orders otherwise than its bytes, integers whose labels
//! order otherwise than they do (weeks, negative decimals), cuts while the groups stream in.

use super::*;
use crate::data::query::columns::Out;
use crate::data::query::order::Wrapping;
use crate::data::query::statement::finish;

/// `n` groups' source rows from a seed: keys from small sets (many ties), NULLs among keys
/// and values. Literal SQL of the test's own values.
fn values_sql(seed: u64, n: usize) -> String {
    let mut x = seed;
    let mut next = |m: u64| {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (x >> 33) % m
    };
    let texts = [
        "'a'", "'B'", "'b'", "'É'", "'é'", "'z'", "''", "'a b'", "NULL",
    ];
    let rows: Vec<String> = (0..n)
        .map(|_| {
            let k0 = texts[next(texts.len() as u64) as usize];
            let k1 = match next(6) {
                0 => "NULL".to_string(),
                w => format!("{}", 2_900 + w as i64 * 7 - 20),
            };
            let v = match next(5) {
                0 => "NULL".to_string(),
                _ => format!("{}", next(21) as i64 - 10),
            };
            let t = texts[next(texts.len() as u64) as usize];
            format!("({k0}, {k1}, {v}, {t})")
        })
        .collect();
    format!(
        "SELECT column1 AS k0, CAST(column2 AS BIGINT) AS k1, CAST(column3 AS BIGINT) AS s, \
         column4 AS t FROM (VALUES {}) v",
        rows.join(", ")
    )
}

/// Keys (text, week), then a count, a sum (a decimal), the least text (or value: a
/// decimal), the greatest value (an instant).
fn grouped(seed: u64, n: usize, postgres: bool, text: bool) -> String {
    let bigint = if postgres { "BIGINT" } else { "INTEGER" };
    let least = if text { "t" } else { "s" };
    format!(
        "SELECT k0, k1, COUNT(*) AS a0, CAST(SUM(s) AS {bigint}) AS a1, MIN({least}) AS a2, \
         MAX(s) AS a3 FROM ({}) i GROUP BY k0, k1",
        values_sql(seed, n)
    )
}

fn outs(text: bool) -> Vec<Out> {
    let least = if text { Out::Text } else { Out::Decimal };
    vec![
        Out::Text,
        Out::Week,
        Out::Int,
        Out::Decimal,
        least,
        Out::Instant,
    ]
}

fn shaped(order_by: Vec<(u32, bool)>, limit: Option<u32>, text: bool) -> Query {
    Query {
        group_by: vec![Key::Field("k0".into()), Key::Field("k1".into())],
        aggregates: vec![
            Aggregate::Count,
            Aggregate::Sum("s".into()),
            Aggregate::Min((if text { "t" } else { "s" }).into()),
            Aggregate::Max("s".into()),
        ],
        order_by,
        limit,
        ..q(Dataset::Loans)
    }
}

async fn host_order_equals_the_engines(store: ReportStore, postgres: bool) {
    let orders = [
        vec![],
        vec![(2, true)],
        vec![(3, false)],
        vec![(3, true), (4, false)],
        vec![(4, true)],
        vec![(5, false), (1, true)],
    ];
    for seed in 1..=4 {
        for order_by in &orders {
            for limit in [None, Some(0), Some(1), Some(7)] {
                for text in [true, false] {
                    // Arrange
                    let q = shaped(order_by.clone(), limit, text);
                    let sql = grouped(seed, 40 + 60 * seed as usize, postgres, text);
                    let how = Wrapping {
                        postgres,
                        totals: true,
                    };
                    let host = finish(&q, sql.clone(), vec![], vec![], outs(text), how).unwrap();
                    let engine = engine_order::wrap(&q, sql, vec![], outs(text), how);
                    // Cut to the best `limit` after every few groups, not only at the end.
                    let mut cutting = host.clone();
                    cutting.order.as_mut().expect("the host orders").hold = 9;

                    // Act
                    let run = |c: Compiled| spawn_execute(&store, c, Allowance::standard());
                    let by_host = run(host).await.unwrap();
                    let by_engine = run(engine).await.unwrap();
                    let by_cuts = run(cutting).await.unwrap();

                    // Assert
                    let case = format!(
                        "postgres {postgres}, seed {seed}, {order_by:?}, {limit:?}, text {text}"
                    );
                    if limit != Some(0) {
                        assert!(
                            by_engine.total > 9,
                            "{case}: too few groups to tell orders apart"
                        );
                    }
                    for by in [&by_host, &by_cuts] {
                        assert_eq!(by.rows, by_engine.rows, "{case}");
                        assert_eq!(by.total, by_engine.total, "{case}");
                        assert_eq!(by.bytes, by_engine.bytes, "{case}");
                        // PostgreSQL's least text is by its collation: the host gives none.
                        if postgres && text {
                            assert_eq!(by.totals, None, "{case}");
                        } else {
                            assert_eq!(by.totals, by_engine.totals, "{case}");
                        }
                    }
                    assert_eq!(
                        by_engine.totals.is_some(),
                        limit.is_some(),
                        "{case}: groups cut add up their totals"
                    );
                }
            }
        }
    }
}

#[tokio::test]
async fn sqlite_host_order_equals_the_engines() {
    let (_dir, _db, one) = one_sqlite_connection().await;
    host_order_equals_the_engines(one, false).await;
}

#[tokio::test]
async fn postgres_host_order_equals_the_engines() {
    let one = ReportStore::Postgres(one_postgres_session());
    host_order_equals_the_engines(one, true).await;
}

#[test]
fn every_callers_groups_are_ordered_by_the_host() {
    // Arrange: the same query for a ConciergeKey, an Agent, a company and everyone.
    let by_referrer = Query {
        group_by: vec![Key::Field("referringAgentId".into())],
        aggregates: vec![Aggregate::Count, Aggregate::Sum("loanAmount".into())],
        order_by: vec![(2, true)],
        ..q(Dataset::Loans)
    };
    for postgres in [false, true] {
        // Act
        let compiled = |scope: Scope| compile(&by_referrer, Some(&scope), true, postgres).unwrap();
        let callers = [
            compiled(concierge()),
            compiled(agent()),
            compiled(company()),
            compiled(admin()),
        ];

        // Assert: every statement groups, unordered, uncounted and unlimited.
        for c in &callers {
            assert!(c.order.is_some() && c.full.is_none(), "{}", c.sql);
            assert!(c.sql.ends_with("GROUP BY k0"), "{}", c.sql);
        }
    }
}
