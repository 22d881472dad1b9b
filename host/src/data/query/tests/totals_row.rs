//! The totals of groups cut by their limit (`HostOrder`, against the engines' own totals row,
//! `engine_order`), on both engines: what they add up, when they are left out (groups within
//! the limit, a sum past 64 bits), and the ungrouped query they answer (`answer_from_totals`).

use super::*;
use crate::data::query::columns::Out;
use crate::data::query::order::Wrapping;
use crate::data::query::statement::finish;

/// Count, sum, least and greatest amount, by status.
fn by_status(limit: u32) -> Query {
    Query {
        group_by: vec![Key::Field("status".into())],
        aggregates: vec![
            Aggregate::Count,
            Aggregate::Sum("loanAmount".into()),
            Aggregate::Min("loanAmount".into()),
            Aggregate::Max("loanAmount".into()),
        ],
        order_by: vec![(1, true)],
        limit: Some(limit),
        ..q(Dataset::Loans)
    }
}

/// [`by_status`]'s statement over fixed groups (key, count, sum, min, max), as `finish`
/// answers any planner's, and as the engine orders it.
fn over_groups(groups: &[(&str, i64, i64, i64, i64)], limit: u32, postgres: bool) -> [Compiled; 2] {
    let values: Vec<String> = groups
        .iter()
        .map(|(k, n, s, m, x)| {
            format!(
                "('{k}', CAST({n} AS BIGINT), CAST({s} AS BIGINT), CAST({m} AS BIGINT), \
                 CAST({x} AS BIGINT))"
            )
        })
        .collect();
    let grouped = format!(
        "SELECT column1 AS k0, column2 AS a0, column3 AS a1, column4 AS a2, column5 AS a3 \
         FROM (VALUES {}) v",
        values.join(", ")
    );
    let outs = vec![
        Out::Text,
        Out::Int,
        Out::Decimal,
        Out::Decimal,
        Out::Decimal,
    ];
    let how = Wrapping {
        postgres,
        totals: true,
    };
    let q = by_status(limit);
    [
        finish(&q, grouped.clone(), vec![], vec![], outs.clone(), how).unwrap(),
        engine_order::wrap(&q, grouped, vec![], outs, how),
    ]
}

async fn totals_rows_on(store: ReportStore, postgres: bool) {
    let groups = [
        ("Loan Open", 3, 30_000, 5_000, 20_000),
        ("Loan Funded", 2, 50_000, 20_000, 30_000),
        ("Loan Closed", 1, 7_000, 7_000, 7_000),
    ];
    let fetch = |c: Compiled| spawn_execute(&store, c, Allowance::standard());
    let huge = 4_000_000_000_000_000_000;
    let past = [
        ("a", 1, huge, 1, 1),
        ("b", 1, huge, 2, 2),
        ("c", 1, huge, 3, 3),
    ];
    let [cut, whole, overflowing] = [(&groups[..], 2), (&groups[..], 3), (&past[..], 1)]
        .map(|(groups, limit)| over_groups(groups, limit, postgres));
    for (i, by) in ["the host", "the engine"].into_iter().enumerate() {
        // Act: cut to two groups; within the limit; cut, with sums past 64 bits between them.
        let cut = fetch(cut[i].clone()).await.unwrap();
        let whole = fetch(whole[i].clone()).await.unwrap();
        let overflowing = fetch(overflowing[i].clone()).await.unwrap();

        // Assert: the cut groups in their order, their number, and every group added up.
        let case = format!("{by}, {}", if postgres { "PostgreSQL" } else { "SQLite" });
        let firsts: Vec<&Value> = cut.rows.iter().map(|r| &r[0]).collect();
        assert_eq!(
            firsts,
            [
                &Value::Text("Loan Open".into()),
                &Value::Text("Loan Funded".into())
            ],
            "{case}"
        );
        assert_eq!(cut.total, 3, "{case}");
        assert_eq!(
            cut.totals,
            Some(vec![
                Value::Null,
                Value::Integer(6),
                Value::Decimal("8.7".into()),
                Value::Decimal("0.5".into()),
                Value::Decimal("3".into()),
            ]),
            "{case}"
        );
        assert_eq!((whole.rows.len(), whole.totals), (3, None), "{case}");
        // A sum that does not fit gives no totals, and the groups still arrive.
        assert_eq!(overflowing.rows.len(), 1, "{case}");
        assert_eq!(overflowing.totals, None, "{case}");
    }

    // Arrange: sums whose running total passes 64 bits on the way to one that fits.
    let big = 5_000_000_000_000_000_000;
    let there_and_back = [
        ("a", 1, big, 1, 1),
        ("b", 1, big, 2, 2),
        ("c", 1, -big, 3, 3),
        ("d", 1, -big, 4, 4),
    ];
    let [host, _] = over_groups(&there_and_back, 1, postgres);

    // Act
    let added = fetch(host).await.unwrap();

    // Assert: the host adds up in 128 bits: the total it gives is the exact one.
    assert_eq!(
        added.totals.as_ref().map(|t| t[2].clone()),
        Some(Value::Decimal("0".into())),
        "postgres {postgres}"
    );
}

#[tokio::test]
async fn sqlite_totals_rows() {
    let (_dir, _db, one) = one_sqlite_connection().await;
    totals_rows_on(one, false).await;
}

#[tokio::test]
async fn postgres_totals_rows() {
    totals_rows_on(ReportStore::Postgres(one_postgres_session()), true).await;
}

#[test]
fn only_queries_whose_groups_add_up_get_a_totals_row() {
    // Arrange: a search (the statement reads the loans), and without it (the import's
    // totals, which answer the ungrouped query as cheaply).
    let grouped = Query {
        filter: Some(json_filter("searchText", "x")),
        ..by_status(10)
    };
    let from_import = Query {
        aggregates: vec![Aggregate::Count, Aggregate::Sum("loanAmount".into())],
        ..by_status(10)
    };
    let mut distinct_count = grouped.clone();
    distinct_count
        .aggregates
        .push(Aggregate::CountDistinct("loanType".into()));
    let distinct_on = Query {
        distinct_on: Some("id".into()),
        ..grouped.clone()
    };
    let ungrouped = Query {
        group_by: vec![],
        order_by: vec![],
        ..grouped.clone()
    };
    for postgres in [false, true] {
        // Act
        let compiled = |q: &Query| compile(q, Some(&admin()), true, postgres).unwrap();
        let totals = |q: &Query| compiled(q).order.is_some_and(|o| o.gives_totals());

        // Assert
        assert!(totals(&grouped), "{}", compiled(&grouped).sql);
        assert!(
            compiled(&from_import).sql.contains("FROM loan_totals"),
            "{}",
            compiled(&from_import).sql
        );
        for other in [&distinct_count, &distinct_on, &ungrouped, &from_import] {
            assert!(!totals(other), "{}", compiled(other).sql);
        }
    }
}

#[test]
fn the_ungrouped_twin_alone_is_answered_from_the_totals() {
    // Arrange: the totals of [`by_status`] (a NULL key, then its aggregates).
    let grouped = by_status(2);
    let totals = vec![
        Value::Null,
        Value::Integer(6),
        Value::Decimal("8.7".into()),
        Value::Decimal("0.5".into()),
        Value::Decimal("3".into()),
    ];
    let twin = Query {
        group_by: vec![],
        order_by: vec![],
        limit: None,
        ..grouped.clone()
    };
    let differing = [
        Query {
            filter: Some(json_filter("searchText", "x")),
            ..twin.clone()
        },
        Query {
            predicates: vec![("status".into(), Condition::IsNotNull)],
            ..twin.clone()
        },
        Query {
            aggregates: twin.aggregates[..2].to_vec(),
            ..twin.clone()
        },
        Query {
            dataset: Dataset::LosStatusHistory,
            ..twin.clone()
        },
        Query {
            limit: Some(0),
            ..twin.clone()
        },
        Query {
            order_by: vec![(0, true)],
            ..twin.clone()
        },
        grouped.clone(),
    ];

    // Act
    let answer = answer_from_totals(&grouped, &totals, &twin).unwrap();

    // Assert: the twin's one row, as its own statement returns it; nothing else answered.
    assert_eq!(answer.rows, vec![totals[1..].to_vec()]);
    assert_eq!(answer.columns, ["agg0", "agg1", "agg2", "agg3"]);
    assert_eq!((answer.total_groups, answer.truncated), (1, false));
    assert_eq!(answer.bytes, 8 + 11 + 11 + 9);
    assert!(answer_from_totals(
        &grouped,
        &totals,
        &Query {
            limit: Some(1),
            ..twin.clone()
        }
    )
    .is_some());
    for q in &differing {
        assert!(answer_from_totals(&grouped, &totals, q).is_none(), "{q:?}");
    }
}
