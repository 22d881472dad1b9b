//! The totals row after groups cut by their limit (`statement::totals_row`), on both engines:
//! what it adds up, when it is left out (groups within the limit, a sum past 64 bits), and
//! the ungrouped query it answers (`answer_from_totals`).

use super::*;

/// Count, sum and least amount, greatest status, by status.
fn by_status(limit: u32) -> Query {
    Query {
        group_by: vec![Key::Field("status".into())],
        aggregates: vec![
            Aggregate::Count,
            Aggregate::Sum("loanAmount".into()),
            Aggregate::Min("loanAmount".into()),
            Aggregate::Max("status".into()),
        ],
        order_by: vec![(1, true)],
        limit: Some(limit),
        ..q(Dataset::Loans)
    }
}

/// [`by_status`]'s statement over fixed groups (key, count, sum, min, max), as `finish` wraps
/// any planner's.
fn over_groups(groups: &[(&str, i64, i64, i64, &str)], limit: u32, postgres: bool) -> Compiled {
    let values: Vec<String> = groups
        .iter()
        .map(|(k, n, s, m, x)| {
            format!("('{k}', CAST({n} AS BIGINT), CAST({s} AS BIGINT), CAST({m} AS BIGINT), '{x}')")
        })
        .collect();
    let grouped = format!(
        "SELECT column1 AS k0, column2 AS a0, column3 AS a1, column4 AS a2, column5 AS a3 \
         FROM (VALUES {}) v",
        values.join(", ")
    );
    let outs = vec![Out::Text, Out::Int, Out::Decimal, Out::Decimal, Out::Text];
    finish(
        &by_status(limit),
        grouped,
        vec![],
        vec![],
        outs,
        Wrapping {
            postgres,
            personal: false,
            totals: true,
        },
    )
    .unwrap()
}

async fn totals_rows_on(store: ReportStore, postgres: bool) {
    let groups = [
        ("Loan Open", 3, 30_000, 5_000, "Loan Open"),
        ("Loan Funded", 2, 50_000, 20_000, "Loan Funded"),
        ("Loan Closed", 1, 7_000, 7_000, "Loan Closed"),
    ];
    let fetch = |c: Compiled| spawn_execute(&store, c, Allowance::standard());

    // Act: cut to two groups; within the limit; cut, with sums past 64 bits between them.
    let cut = fetch(over_groups(&groups, 2, postgres)).await.unwrap();
    let whole = fetch(over_groups(&groups, 3, postgres)).await.unwrap();
    let huge = 4_000_000_000_000_000_000;
    let past = [
        ("a", 1, huge, 1, "a"),
        ("b", 1, huge, 2, "b"),
        ("c", 1, huge, 3, "c"),
    ];
    let overflowing = fetch(over_groups(&past, 1, postgres)).await.unwrap();

    // Assert: the cut groups in their order, their number, and every group added up.
    let engine = if postgres { "PostgreSQL" } else { "SQLite" };
    let firsts: Vec<&Value> = cut.rows.iter().map(|r| &r[0]).collect();
    assert_eq!(
        firsts,
        [
            &Value::Text("Loan Open".into()),
            &Value::Text("Loan Funded".into())
        ],
        "{engine}"
    );
    assert_eq!(cut.total, 3, "{engine}");
    assert_eq!(
        cut.totals,
        Some(vec![
            Value::Null,
            Value::Integer(6),
            Value::Decimal("8.7".into()),
            Value::Decimal("0.5".into()),
            Value::Text("Loan Open".into()),
        ]),
        "{engine}"
    );
    assert_eq!((whole.rows.len(), whole.totals), (3, None), "{engine}");
    // A sum that does not fit gives no row, and the groups still arrive.
    assert_eq!(overflowing.rows.len(), 1, "{engine}");
    assert_eq!(overflowing.totals, None, "{engine}");
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
        let sql = |q: &Query| compile(q, Some(&admin()), true, postgres).unwrap().sql;

        // Assert
        assert!(
            sql(&grouped).contains(") r UNION ALL SELECT NULL, CAST(SUM(a0) AS"),
            "{}",
            sql(&grouped)
        );
        assert!(
            sql(&from_import).contains("FROM loan_totals"),
            "{}",
            sql(&from_import)
        );
        for other in [&distinct_count, &distinct_on, &ungrouped, &from_import] {
            assert!(!sql(other).contains("UNION ALL"), "{}", sql(other));
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
        Value::Text("Loan Open".into()),
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
    assert_eq!(answer.bytes, 8 + 11 + 11 + 17);
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
