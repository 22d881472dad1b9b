//! Months, quarters and years over the snapshot's stored month indexes (schema v6): which
//! statements group by the index, when its covering index serves the whole query, and that
//! SQLite reads that index in key order; weeks grouped as integers and labelled after, and on
//! PostgreSQL grouped behind a fence before the groups are ordered.

use super::*;
use crate::data::query::columns::Out;
use crate::data::query::columns::P;

fn by_month(field: &str, unit: PeriodUnit, predicates: Vec<(String, Condition)>) -> Query {
    Query {
        predicates,
        group_by: vec![Key::Period(field.into(), unit)],
        aggregates: vec![
            Aggregate::Count,
            Aggregate::CountOf("loanAmount".into()),
            Aggregate::Sum("loanAmount".into()),
            Aggregate::Max("estimatedCompensation".into()),
        ],
        ..q(Dataset::Loans)
    }
}

/// Asserts that the statement's first `WHERE` clause begins with `prefix`.
fn assert_where_begins(c: &Compiled, prefix: &str) {
    let at = c.sql.find(" WHERE ").expect("a WHERE clause");
    assert!(c.sql[at..].starts_with(prefix), "{}", c.sql);
}

fn at(field: &str, c: fn(Value) -> Condition, when: &str) -> (String, Condition) {
    (field.into(), c(Value::Timestamp(when.into())))
}

/// Months of the status date from 2026-02 to 2026-04, as whole months (the null check
/// `report_loans` adds, and bounds at month starts).
fn february_to_april() -> Query {
    by_month(
        "statusDate",
        PeriodUnit::Month,
        vec![
            ("statusDate".into(), Condition::IsNotNull),
            at("statusDate", Condition::Ge, "2026-02-01T00:00:00Z"),
            at("statusDate", Condition::Lt, "2026-05-01T00:00:00Z"),
        ],
    )
}

#[test]
fn months_quarters_and_years_group_by_the_stored_month_index() {
    // Organisation-wide, the whole snapshot: the totals per month index (schema v11),
    // labelled after grouping.
    let q0 = by_month("updated", PeriodUnit::Quarter, vec![]);
    let c = compile(&q0, Some(&admin()), true, false).unwrap();
    assert!(
        c.sql.contains("SELECT updated_month AS r0, loans AS p0")
            && c.sql
                .contains("FROM loan_totals_updated_months) i GROUP BY k0"),
        "{}",
        c.sql
    );
    assert!(c.sql.contains("printf('%04d-Q%d', r0 / 12"), "{}", c.sql);
    assert!(!c.sql.contains("strftime"), "{}", c.sql);
    let c = compile(&q0, Some(&admin()), true, true).unwrap();
    assert!(
        c.sql.contains("to_char(r0 / 12, 'FM0000') || '-Q'"),
        "{}",
        c.sql
    );

    // The null check and whole months: the same bounds on the month index (2026-02 is
    // 2026 × 12 + 1), on the totals organisation-wide and on the company's rows of the
    // totals per company (schema v12).
    let window = february_to_april();
    let c = compile(&window, Some(&admin()), true, false).unwrap();
    assert!(
        c.sql.contains(
            "FROM loan_totals_status_months WHERE status_month IS NOT NULL AND status_month >= ? AND status_month < ?"
        ),
        "{}",
        c.sql
    );
    let company_window = compile(&window, Some(&company()), true, false).unwrap();
    assert!(
        company_window.sql.contains(
            "FROM loan_company_totals_status_months WHERE company_id = ? AND status_month IS NOT NULL AND status_month >= ? AND status_month < ?"
        ),
        "{}",
        company_window.sql
    );
    for c in [&c, &company_window] {
        assert!(!c.sql.contains("l.status_date"), "{}", c.sql);
        assert!(c.sql.contains("SELECT status_month AS r0"), "{}", c.sql);
        assert_eq!(int_params(c), [2026 * 12 + 1, 2026 * 12 + 4]);
    }

    // Not whole months (a bound inside a month, or `>` / `<=`): the dates' own predicates,
    // and the index kept off on SQLite (`+`) as for any uncovered key.
    for bound in [
        at("statusDate", Condition::Ge, "2026-02-01T00:00:00.001Z"),
        at("statusDate", Condition::Gt, "2026-02-01T00:00:00Z"),
        at("statusDate", Condition::Le, "2026-05-01T00:00:00Z"),
    ] {
        let q1 = by_month("statusDate", PeriodUnit::Month, vec![bound]);
        let c = compile(&q1, Some(&admin()), true, false).unwrap();
        assert!(c.sql.contains("SELECT +l.status_month AS r0"), "{}", c.sql);
        assert!(c.sql.contains("l.status_date "), "{}", c.sql);
    }
    // A scoped caller, or a field the index does not hold: still the month index, off the
    // index; the null check reads the date.
    let scoped = by_month(
        "statusDate",
        PeriodUnit::Year,
        vec![("statusDate".into(), Condition::IsNotNull)],
    );
    let c = compile(&scoped, Some(&agent()), false, false).unwrap();
    assert!(c.sql.contains("SELECT +l.status_month AS r0"), "{}", c.sql);
    assert!(c.sql.contains("l.status_date IS NOT NULL"), "{}", c.sql);
    let mut state = q0.clone();
    state
        .aggregates
        .push(Aggregate::Max("propertyState".into()));
    let c = compile(&state, Some(&admin()), true, false).unwrap();
    assert!(c.sql.contains("SELECT +l.updated_month AS r0"), "{}", c.sql);
    assert!(!c.sql.contains("loan_totals"), "{}", c.sql);

    // Weeks have no stored index on loans: the integer week of each row (a floor division),
    // grouped and ordered as that integer, and labelled by the host after its order
    // (`Out::Week`), on both engines.
    let weeks = by_month("updated", PeriodUnit::Week, vec![]);
    for postgres in [false, true] {
        let c = compile(&weeks, Some(&admin()), true, postgres).unwrap();
        assert!(
            c.sql.contains(
                "CASE WHEN (l.updated + 259200000) >= 0 THEN (l.updated + 259200000) / 604800000"
            ),
            "{}",
            c.sql
        );
        assert!(
            c.order.is_some() && !c.sql.contains("ORDER BY"),
            "the host orders the weeks: {}",
            c.sql
        );
        assert!(
            !c.sql.contains("strftime") && !c.sql.contains("to_char"),
            "{}",
            c.sql
        );
        let labels = &c.order.as_ref().expect("the host orders the weeks").outs;
        assert!(
            matches!((c.outs[0], labels[0]), (Out::Int, Out::Week)),
            "{:?}, {labels:?}",
            c.outs
        );
    }
    let mut distinct = q0.clone();
    distinct.distinct_on = Some("id".into());
    let c = compile(&distinct, Some(&admin()), true, false).unwrap();
    assert!(!c.sql.contains("updated_month"), "{}", c.sql);
}

#[test]
fn a_distinct_count_by_month_the_totals_do_not_hold_still_bounds_the_month_index() {
    // Arrange: organisation-wide, whole months, and a distinct count of an amount, which the
    // totals (schema v11) do not hold: the loans are read, through the covering index that
    // leads with the month index (`covered_month`).
    let mut query = february_to_april();
    query
        .aggregates
        .push(Aggregate::CountDistinct("loanAmount".into()));

    // Act
    let c = compile(&query, Some(&admin()), true, false).unwrap();

    // Assert: the dates' bounds as bounds on the month index (the rows' labels still read
    // the date), no totals.
    assert_where_begins(
        &c,
        " WHERE 1 = 1 AND l.status_month IS NOT NULL AND l.status_month >= ? AND l.status_month < ?)",
    );
    assert!(!c.sql.contains("loan_totals"), "{}", c.sql);
    assert!(int_params(&c).ends_with(&[2026 * 12 + 1, 2026 * 12 + 4]));
}

#[tokio::test]
async fn sqlite_searches_a_companys_months_in_the_index_that_holds_them() {
    // Arrange: the migrated schema (no rows needed for the plan). Of the totalled amounts
    // alone, the totals answer these (schema v11, per company v12); with a distinct count,
    // a company's whole months of the status date are a range of the index that holds them
    // after the company (schema v9).
    let (_dir, db) = scratch_sqlite().await;
    let Db::Sqlite(pool) = &db else {
        unreachable!()
    };
    let cases = [
        (
            by_month("statusDate", PeriodUnit::Year, vec![]),
            "(company_id=?)",
        ),
        (
            by_month(
                "statusDate",
                PeriodUnit::Month,
                vec![
                    ("statusDate".into(), Condition::IsNotNull),
                    at("statusDate", Condition::Ge, "2024-11-01T00:00:00Z"),
                    at("statusDate", Condition::Lt, "2026-11-01T00:00:00Z"),
                ],
            ),
            "(company_id=? AND status_month>? AND status_month<?)",
        ),
    ];
    for (mut query, range) in cases {
        query
            .aggregates
            .push(Aggregate::CountDistinct("loanAmount".into()));
        let c = compile(&query, Some(&company()), true, false).unwrap();
        assert!(!c.sql.contains("loan_company_totals"), "{}", c.sql);
        let sql = c.sql.replace("?", "NULL");

        // Act
        let rows = sqlx::query(&format!("EXPLAIN QUERY PLAN {sql}"))
            .fetch_all(pool)
            .await
            .unwrap();
        let details: Vec<String> = rows
            .iter()
            .map(|r| sqlx::Row::get::<String, _>(r, "detail"))
            .collect();

        // Assert: the company's loans are searched in the index, over the window's months.
        let joined = details.join(" | ").replace("NULL", "?");
        assert!(
            joined.contains(&format!(
                "SEARCH l USING INDEX loans_company_status_months {range}"
            )),
            "{joined}"
        );
    }
}

#[test]
fn a_companys_months_of_the_status_date_are_read_as_bounds_on_its_month_index() {
    // Arrange: a Processor's pipeline trend (whole months of the status date), and the same
    // over another date, for a company's scope and an Agent's, with a distinct count the
    // totals per company (schema v12) do not hold: the company's loans are read.
    let company = company();
    let window = vec![
        at("statusDate", Condition::Ge, "2026-09-01T00:00:00Z"),
        at("statusDate", Condition::Lt, "2026-12-01T00:00:00Z"),
    ];
    let mut trend = by_month("statusDate", PeriodUnit::Month, window);
    let mut updated = by_month(
        "updated",
        PeriodUnit::Month,
        vec![at("updated", Condition::Ge, "2026-09-01T00:00:00Z")],
    );
    for q in [&mut trend, &mut updated] {
        q.aggregates
            .push(Aggregate::CountDistinct("loanAmount".into()));
    }

    for postgres in [false, true] {
        // Act
        let c = compile(&trend, Some(&company), true, postgres).unwrap();
        let other_date = compile(&updated, Some(&company), true, postgres).unwrap();
        let agent = compile(&trend, Some(&agent()), true, postgres).unwrap();

        // Assert: the window as bounds on the month index (SQLite searches
        // `loans_company_status_months` after the company), not on the date.
        assert_where_begins(
            &c,
            " WHERE (l.company_id = ?) AND l.status_month >= ? AND l.status_month < ?",
        );
        let bound = |m: i64| c.params.iter().any(|p| matches!(p, P::I(v) if *v == m));
        assert!(
            bound(2026 * 12 + 8) && bound(2026 * 12 + 11),
            "{:?}",
            c.params
        );
        // Only the status date has the company's month index; only a company's scope.
        assert!(
            !other_date.sql.contains("updated_month >="),
            "{}",
            other_date.sql
        );
        assert!(!agent.sql.contains("status_month >="), "{}", agent.sql);
    }
}

#[test]
fn statements_group_and_the_host_orders_counts_and_limits() {
    // Arrange: the deals by ISO week (a computed key the planner has no statistics for), read
    // from the rows: a condition on the stage keeps them off schema v10's counts.
    let weeks = Query {
        predicates: vec![("stage".into(), Condition::IsNotNull)],
        group_by: vec![
            Key::Period("createdAt".into(), PeriodUnit::Week),
            Key::Field("stage".into()),
        ],
        aggregates: vec![Aggregate::CountDistinct("id".into())],
        ..q(Dataset::DwDeals)
    };

    // Act
    let pg = compile(&weeks, Some(&admin()), true, true).unwrap();
    let lite = compile(&weeks, Some(&admin()), true, false).unwrap();

    // Assert: on both engines the statement is the grouping alone (no fence that the order
    // would see through, no count, no order, no limit); the host does the rest.
    for c in [&pg, &lite] {
        assert!(c.sql.starts_with("SELECT k0, k1"), "{}", c.sql);
        for wrapping in ["MATERIALIZED", "COUNT(*)", "ORDER BY", "LIMIT", "UNION"] {
            assert!(!c.sql.contains(wrapping), "{wrapping}: {}", c.sql);
        }
        assert!(c.order.is_some() && c.full.is_none(), "{}", c.sql);
    }
}
