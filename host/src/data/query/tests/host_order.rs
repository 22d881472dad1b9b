//! The host's order of a person's groups (`HostOrder`) against the order, count and limit the
//! engines give the same groups (`statement::finish`'s wrapping, the statement's `full`), on
//! both engines: ties, NULL keys and aggregates, text that a locale orders otherwise than its
//! bytes, integers whose labels order otherwise than they do (weeks, negative decimals).

use super::*;

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

/// Keys (text, week), then a count, a sum (a decimal), the least text, the greatest value
/// (an instant).
fn grouped(seed: u64, n: usize, postgres: bool) -> String {
    let bigint = if postgres { "BIGINT" } else { "INTEGER" };
    format!(
        "SELECT k0, k1, COUNT(*) AS a0, CAST(SUM(s) AS {bigint}) AS a1, MIN(t) AS a2, \
         MAX(s) AS a3 FROM ({}) i GROUP BY k0, k1",
        values_sql(seed, n)
    )
}

const OUTS: [Out; 6] = [
    Out::Text,
    Out::Week,
    Out::Int,
    Out::Decimal,
    Out::Text,
    Out::Instant,
];

fn shaped(order_by: Vec<(u32, bool)>, limit: Option<u32>) -> Query {
    Query {
        group_by: vec![Key::Field("k0".into()), Key::Field("k1".into())],
        aggregates: vec![
            Aggregate::Count,
            Aggregate::Sum("s".into()),
            Aggregate::Min("t".into()),
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
                // Arrange
                let q = shaped(order_by.clone(), limit);
                let sql = grouped(seed, 40 + 60 * seed as usize, postgres);
                let host = finish(
                    &q,
                    sql.clone(),
                    vec![],
                    vec![],
                    OUTS.to_vec(),
                    Wrapping {
                        postgres,
                        personal: true,
                        totals: true,
                    },
                )
                .unwrap();
                let engine = *host
                    .full
                    .clone()
                    .expect("the engine's order answers past the cap");
                let engine_sql = engine.sql.clone();
                let not_personal = finish(
                    &q,
                    sql,
                    vec![],
                    vec![],
                    OUTS.to_vec(),
                    Wrapping {
                        postgres,
                        personal: false,
                        totals: true,
                    },
                )
                .unwrap();
                let mut over_cap = host.clone();
                over_cap
                    .order
                    .as_mut()
                    .expect("a person's groups are ordered by the host")
                    .cap = 3;

                // Act
                let run = |c: Compiled| spawn_execute(&store, c, Allowance::standard());
                let by_host = run(host).await.unwrap();
                let by_engine = run(engine).await.unwrap();
                let fallback = run(over_cap).await.unwrap();

                // Assert
                let case = format!("postgres {postgres}, seed {seed}, {order_by:?}, {limit:?}");
                if limit != Some(0) {
                    assert!(
                        by_engine.total > 7,
                        "{case}: too few groups to tell orders apart"
                    );
                }
                assert_eq!(by_host.rows, by_engine.rows, "{case}");
                assert_eq!(by_host.total, by_engine.total, "{case}");
                assert_eq!(by_host.bytes, by_engine.bytes, "{case}");
                assert_eq!(fallback.rows, by_engine.rows, "{case}: past the cap");
                assert!(not_personal.order.is_none() && not_personal.full.is_none());
                assert_eq!(
                    not_personal.sql, engine_sql,
                    "{case}: everyone else's statement"
                );
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
fn a_persons_groups_are_ordered_by_the_host_and_everyone_elses_by_the_engine() {
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
        let (concierge, agent, company, admin) = (
            compiled(concierge()),
            compiled(agent()),
            compiled(company()),
            compiled(admin()),
        );

        // Assert: a person's statement groups and stops one group past the cap, unordered.
        for person in [&concierge, &agent] {
            assert!(person.order.is_some(), "{}", person.sql);
            assert!(
                person
                    .sql
                    .ends_with(&format!("GROUP BY k0 LIMIT {}", HOST_ORDER_GROUPS + 1)),
                "{}",
                person.sql
            );
            let full = person.full.as_ref().unwrap();
            assert!(
                full.sql.contains("ORDER BY a1 DESC NULLS LAST"),
                "{}",
                full.sql
            );
            assert_eq!(format!("{:?}", full.params), format!("{:?}", person.params));
            assert_eq!(full.plans, person.plans);
        }
        for everyone in [&company, &admin] {
            assert!(
                everyone.order.is_none() && everyone.full.is_none(),
                "{}",
                everyone.sql
            );
        }
    }
}
