//! The planners against each other and against the rows: history read alone, period sets,
//! covering indexes, pre-aggregated partials.

use super::*;
use crate::data::query::columns::P;
use crate::data::values::parse_instant;

#[test]
fn history_is_read_alone_only_for_an_unfiltered_organisation_wide_query() {
    for postgres in [false, true] {
        // Admin, no filter: history rows alone, their carried amount, integer loan keys.
        let c = compile(&milestones(), Some(&admin()), true, postgres).unwrap();
        assert!(
            c.sql
                .contains("FROM los_status_history h WHERE h.in_snapshot = 1 AND"),
            "{}",
            c.sql
        );
        assert!(
            c.sql.contains("h.loan_key AS dd") && c.sql.contains("h.loan_amount AS s1"),
            "{}",
            c.sql
        );
        assert!(!c.sql.contains("JOIN loans"), "{}", c.sql);

        // An Agent: joined, scoped on the loan.
        let c = compile(&milestones(), Some(&agent()), false, postgres).unwrap();
        assert!(
            c.sql
                .contains("JOIN loans l ON l.key = h.loan_key WHERE ((l.loan_officer_id"),
            "{}",
            c.sql
        );
        assert!(
            c.sql.contains("l.loan_amount AS s1") && !c.sql.contains("in_snapshot"),
            "{}",
            c.sql
        );

        // An Admin with a filter, or reading another loan field: joined.
        let mut filtered = milestones();
        filtered.filter = Some(r#"{"statuses": ["Loan Open"]}"#.into());
        let c = compile(&filtered, Some(&admin()), true, postgres).unwrap();
        assert!(
            c.sql.contains("JOIN loans l") && c.sql.contains("l.status IN (?)"),
            "{}",
            c.sql
        );
        let mut other = milestones();
        other.aggregates.push(Aggregate::Max("loan.updated".into()));
        let c = compile(&other, Some(&admin()), true, postgres).unwrap();
        assert!(c.sql.contains("JOIN loans l"), "{}", c.sql);

        // An empty filter constrains nothing: still alone.
        let mut empty = milestones();
        empty.filter = Some(r#"{"statuses": [], "searchText": null}"#.into());
        let c = compile(&empty, Some(&admin()), true, postgres).unwrap();
        assert!(!c.sql.contains("JOIN loans"), "{}", c.sql);
    }
}

#[test]
fn whole_periods_count_the_period_sets() {
    for postgres in [false, true] {
        whole_months_read_the_months_sets(postgres);
        whole_weeks_read_the_weeks_sets(postgres);
        the_funnel_and_the_raw_status_read_the_counts(postgres);
        an_agent_reads_the_agents_loan_rows(postgres);
        other_queries_de_duplicate_history_rows(postgres);
    }
}

/// The month `s` (a date) falls in, as the import numbers months.
fn month_of(s: &str) -> i64 {
    crate::data::history_keys::month_index(parse_instant(s).unwrap())
}

/// The milestones of 2026's first quarter by month and stage.
fn whole() -> Query {
    milestones_between(PeriodUnit::Month, "2026-01-01", "2026-04-01")
}

/// Whether `q` compiles, for `scope`, to the statement that de-duplicates history rows.
fn generic(q: &Query, scope: &Scope, postgres: bool) -> bool {
    let c = compile(q, Some(scope), true, postgres).unwrap();
    !c.sql.contains("los_history_") && c.sql.contains("SELECT DISTINCT")
}

fn whole_months_read_the_months_sets(postgres: bool) {
    use crate::data::history_keys::STATUS_BITS;
    // Whole months: the months' sets as counted by the import (schema v7), no history
    // row, the stage bits.
    let q = milestones_between(
        PeriodUnit::Month,
        "2026-01-01T00:00:00Z",
        "2026-04-01T00:00:00Z",
    );
    let c = compile(&q, Some(&admin()), true, postgres).unwrap();
    let (jan, mar) = (month_of("2026-01-15"), month_of("2026-03-15"));
    assert!(
        c.sql.contains(&format!(
            "r.loans, r.amount_sum FROM los_set_counts_months r WHERE r.period_index >= {jan} AND r.period_index <= {mar}"
        )) && !c.sql.contains("los_status_history")
            && !c.sql.contains("los_history_months")
            && !c.sql.contains("DISTINCT"),
        "{}",
        c.sql
    );
    // The host folds the sets: the window's periods and the labels' bits are its own,
    // not the statement's.
    assert!(c.params.is_empty(), "{:?}", c.params);
    let fold = c.fold.as_ref().expect("the sets are folded by the host");
    let mut periods: Vec<(i64, &str)> =
        fold.periods.iter().map(|(i, l)| (*i, l.as_str())).collect();
    periods.sort();
    assert_eq!(
        periods,
        [(jan, "2026-01"), (jan + 1, "2026-02"), (mar, "2026-03")]
    );
    assert_eq!(fold.labels, ["1. Opened", "Other"]);
    // "Loan Open" is bit 2; "Other" is every other bit, the unlisted one included.
    let label_of = |bit: usize| fold.bit_labels[bit];
    assert_eq!(label_of(2), 0b01);
    for bit in (0..STATUS_BITS.len()).filter(|b| *b != 2).chain([62]) {
        assert_eq!(label_of(bit), 0b10, "bit {bit}");
    }
    assert_eq!(label_of(STATUS_BITS.len()), 0, "no status has this bit");
}

fn whole_weeks_read_the_weeks_sets(postgres: bool) {
    use crate::data::history_keys::week_index;
    let ms = |s: &str| parse_instant(s).unwrap();
    // Whole weeks, the bounds written as Gt/Le: the weeks' sets.
    let mut q = milestones_between(
        PeriodUnit::Week,
        "2026-01-05T00:00:00Z",
        "2026-01-26T00:00:00Z",
    );
    q.predicates[0].1 = Condition::Gt(Value::Timestamp("2026-01-04T23:59:59.999Z".into()));
    q.predicates[1].1 = Condition::Le(Value::Timestamp("2026-01-25T23:59:59.999Z".into()));
    let c = compile(&q, Some(&admin()), true, postgres).unwrap();
    let (first, last) = (week_index(ms("2026-01-05")), week_index(ms("2026-01-25")));
    assert_eq!(last - first, 2);
    assert!(
        c.sql.contains(&format!(
            "FROM los_set_counts_weeks r WHERE r.period_index >= {first} AND r.period_index <= {last}"
        )),
        "{}",
        c.sql
    );
}

fn the_funnel_and_the_raw_status_read_the_counts(postgres: bool) {
    use crate::data::history_keys::STATUS_BITS;
    let (jan, mar) = (month_of("2026-01-15"), month_of("2026-03-15"));
    // The funnel of docs/design.md §7.3, whose `Rate Locked` is a raw milestone, not a
    // loan status: still the plan.
    let mut funnel = whole();
    let stage = |v: &str, l: &str| (v.to_string(), l.to_string());
    funnel.group_by[1] = Key::Mapped(
        "milestone".into(),
        vec![
            stage("Loan Open", "1. Opened"),
            stage("Loan Preapproval", "2. Pre-Approved"),
            stage("Rate Locked", "3. Rate Locked"),
            stage("Loan Approved", "4. Approved"),
            stage("Loan Clear To Close", "4. Approved"),
            stage("Loan Closed", "5. Closed & Funded"),
            stage("Loan Funded", "5. Closed & Funded"),
        ],
        Some("Other".into()),
    );
    assert!(!generic(&funnel, &admin(), postgres));
    // The raw status as the key: the statuses' own counts (schema v13), a row per
    // (period, status text), listed or not; no set and no history row is read.
    let mut raw = whole();
    raw.group_by[1] = Key::Field("milestone".into());
    let c = compile(&raw, Some(&admin()), true, postgres).unwrap();
    assert_eq!(
        c.sql,
        format!(
            "SELECT CAST(r.period_index AS {bigint}), CAST(NULL AS {bigint}), r.status, r.loans, r.amount_sum \
             FROM los_status_counts_months r WHERE r.period_index >= {jan} AND r.period_index <= {mar}",
            bigint = if postgres { "BIGINT" } else { "INTEGER" }
        )
    );
    let fold = c.fold.as_ref().expect("the sets are folded by the host");
    assert_eq!(
        (fold.periods.len(), fold.labels.len()),
        (3, STATUS_BITS.len()),
        "the periods, then every listed status"
    );
    // Another history field as the key is not the status: row by row.
    let mut by_day = whole();
    by_day.group_by[1] = Key::Field("loanId".into());
    assert!(generic(&by_day, &admin(), postgres));
}

fn an_agent_reads_the_agents_loan_rows(postgres: bool) {
    // An Agent: the Agent's loan rows (schema v15) with their months' sets and amounts.
    let c = compile(&whole(), Some(&agent()), false, postgres).unwrap();
    assert_eq!(
        (c.sql.as_str(), c.full.is_none()),
        (
            "SELECT p.loan_key, p.months, p.loan_amount FROM person_loans p WHERE (p.person_id = ?)",
            true
        )
    );
    // A field the loan rows do not carry: the sets of the Agent's loans, joined by key;
    // the loan's own amount.
    let mut uncarried = whole();
    uncarried
        .aggregates
        .push(Aggregate::Min("loan.lockedCompensation".into()));
    let c = compile(&uncarried, Some(&agent()), false, postgres).unwrap();
    assert!(
        c.sql.contains(
            "FROM los_history_months r JOIN loans l ON l.key = r.loan_key WHERE ((l.loan_officer_id"
        ) && c.sql.contains(&format!(
            "CAST(SUM(l.loan_amount) AS {}) AS p0",
            if postgres { "BIGINT" } else { "INTEGER" }
        ))
            && !c.sql.contains("los_status_history")
            && !c.sql.contains("in_snapshot"),
        "{}",
        c.sql
    );
}

/// Not these: an unlisted status in the map, no fallback label, quarters, a
/// distinct count, an unbounded window, part of a period, another predicate, a
/// field of the history row. They de-duplicate history rows.
fn other_queries_de_duplicate_history_rows(postgres: bool) {
    let mut unlisted = whole();
    unlisted.group_by[1] = Key::Mapped(
        "milestone".into(),
        vec![("Submitted to investor".into(), "Sold".into())],
        Some("Other".into()),
    );
    assert!(generic(&unlisted, &admin(), postgres));
    let mut no_fallback = whole();
    no_fallback.group_by[1] = Key::Mapped(
        "milestone".into(),
        vec![("Loan Open".into(), "1. Opened".into())],
        None,
    );
    assert!(generic(&no_fallback, &admin(), postgres));
    let mut quarters = whole();
    quarters.group_by[0] = Key::Period("occurredAt".into(), PeriodUnit::Quarter);
    assert!(generic(&quarters, &admin(), postgres));
    let mut distinct = whole();
    distinct
        .aggregates
        .push(Aggregate::CountDistinct("loan.loanAmount".into()));
    assert!(generic(&distinct, &admin(), postgres));
    let mut row_field = whole();
    row_field
        .aggregates
        .push(Aggregate::Max("occurredAt".into()));
    assert!(generic(&row_field, &agent(), postgres));
    assert!(generic(&milestones(), &admin(), postgres));
    let part = milestones_between(PeriodUnit::Week, "2026-01-07", "2026-01-19");
    assert!(generic(&part, &admin(), postgres));
    let mut other = whole();
    other.predicates.push((
        "milestone".into(),
        Condition::Ne(Value::Text("Loan Open".into())),
    ));
    assert!(generic(&other, &admin(), postgres));
}

#[test]
fn a_loan_id_reads_back_as_its_uuid_and_counts_distinct_on_its_key() {
    let query = Query {
        group_by: vec![Key::Field("loanId".into())],
        aggregates: vec![Aggregate::CountDistinct("loanId".into())],
        ..q(Dataset::DwLoanMilestones)
    };
    let c = compile(&query, None, true, false).unwrap();
    assert!(
        c.sql
            .contains("(SELECT lk.id FROM loan_keys lk WHERE lk.key = m.loan_key) AS k0"),
        "{}",
        c.sql
    );
    assert!(
        c.sql.contains("m.loan_key AS s0") && c.sql.contains("COUNT(DISTINCT s0)"),
        "{}",
        c.sql
    );
    // A primary key (a deal's id, a loan's) never repeats in its own dataset: counted.
    for (dataset, field, source) in [
        (Dataset::DwDeals, "id", "d.id"),
        (Dataset::Loans, "id", "l.key"),
    ] {
        let query = Query {
            aggregates: vec![Aggregate::CountDistinct(field.into())],
            ..q(dataset)
        };
        let c = compile(&query, Some(&admin()), true, false).unwrap();
        assert!(c.sql.contains(&format!("{source} AS s0")), "{}", c.sql);
        assert!(
            c.sql.contains("COUNT(s0)") && !c.sql.contains("DISTINCT"),
            "{}",
            c.sql
        );
    }
}

#[test]
fn a_whole_snapshot_group_by_on_a_covered_key_reads_the_index_in_order() {
    // Counts, sums, minimums and maximums of the whole snapshot come from its totals (schema
    // v11); a distinct count, which they do not hold, reads the loans.
    let totalled = Query {
        group_by: vec![Key::Field("status".into())],
        aggregates: vec![Aggregate::Count, Aggregate::Sum("loanAmount".into())],
        ..q(Dataset::Loans)
    };
    let c = compile(&totalled, Some(&admin()), true, false).unwrap();
    assert!(c.sql.contains("FROM loan_totals_status"), "{}", c.sql);
    let mut by_status = totalled.clone();
    by_status
        .aggregates
        .push(Aggregate::CountDistinct("loanAmount".into()));
    // SQLite, Admin: the key as is (the covering index serves it in order).
    let c = compile(&by_status, Some(&admin()), true, false).unwrap();
    assert!(c.sql.contains("SELECT l.status AS k0"), "{}", c.sql);
    // An Agent (scope predicate), or a field the index does not hold: kept off the index.
    let c = compile(&by_status, Some(&agent()), false, false).unwrap();
    assert!(c.sql.contains("SELECT +l.status AS k0"), "{}", c.sql);
    let mut by_state = by_status.clone();
    by_state
        .aggregates
        .push(Aggregate::Max("propertyState".into()));
    let c = compile(&by_state, Some(&admin()), true, false).unwrap();
    assert!(c.sql.contains("+l.status AS k0"), "{}", c.sql);

    // The officer's index (migration 0006): (id, name) or the id alone, a prefix in order.
    let by_officer = |keys: &[&str]| Query {
        group_by: keys.iter().map(|k| Key::Field(k.to_string())).collect(),
        aggregates: vec![
            Aggregate::Count,
            Aggregate::Sum("lockedCompensation".into()),
            Aggregate::CountDistinct("loanAmount".into()),
        ],
        ..q(Dataset::Loans)
    };
    let c = compile(
        &by_officer(&["loanOfficerId", "loanOfficerName"]),
        Some(&admin()),
        true,
        false,
    )
    .unwrap();
    assert!(
        c.sql
            .contains("SELECT l.loan_officer_id AS k0, l.loan_officer_name AS k1"),
        "{}",
        c.sql
    );
    let c = compile(
        &by_officer(&["referringAgentId"]),
        Some(&admin()),
        true,
        false,
    )
    .unwrap();
    assert!(
        c.sql.contains("SELECT l.referring_agent_id AS k0"),
        "{}",
        c.sql
    );
    // Not a prefix of the index in its order: the name alone, or the name first.
    for keys in [
        &["loanOfficerName"][..],
        &["loanOfficerName", "loanOfficerId"],
        &["loanOfficerId", "referringAgentName"],
    ] {
        let c = compile(&by_officer(keys), Some(&admin()), true, false).unwrap();
        assert!(c.sql.contains("SELECT +l."), "{keys:?}: {}", c.sql);
    }
}

#[test]
fn a_mapped_key_aggregates_raw_values_first_and_merges_the_partials() {
    let stages = Query {
        group_by: vec![Key::Mapped(
            "status".into(),
            vec![
                ("Loan Open".into(), "Open".into()),
                ("Loan Funded".into(), "Done".into()),
            ],
            Some("Other".into()),
        )],
        aggregates: vec![
            Aggregate::Count,
            Aggregate::CountOf("loanAmount".into()),
            Aggregate::Sum("loanAmount".into()),
            Aggregate::Min("loanAmount".into()),
            Aggregate::Max("loanAmount".into()),
        ],
        ..q(Dataset::Loans)
    };
    // A managed officer's loans (organisation-wide and for a company, the totals hold these
    // partials: schema v11 and v12).
    let c = compile(&stages, Some(&concierge()), true, true).unwrap();
    assert!(
        c.sql.contains("SELECT CASE r0 WHEN ? THEN ? WHEN ? THEN ? ELSE ? END AS k0, CAST(SUM(p0) AS BIGINT) AS a0, CAST(SUM(p1) AS BIGINT) AS a1, CAST(SUM(p2) AS BIGINT) AS a2, MIN(p3) AS a3, MAX(p4) AS a4 FROM (SELECT l.status AS r0, COUNT(*) AS p0, COUNT(l.loan_amount) AS p1, SUM(l.loan_amount) AS p2, MIN(l.loan_amount) AS p3, MAX(l.loan_amount) AS p4 FROM loans l WHERE (l.loan_officer_id IN (?)) GROUP BY r0) i GROUP BY k0"),
        "{}",
        c.sql
    );
    // The labels' parameters come first, as the statement's text has them.
    assert!(matches!(&c.params[0], P::T(v) if v == "Loan Open"));
    assert!(matches!(c.params.last(), Some(P::T(v)) if v == "o"));
    let c = compile(&stages, Some(&admin()), true, true).unwrap();
    assert!(
        c.sql.contains("SELECT CASE r0 WHEN ? THEN ? WHEN ? THEN ? ELSE ? END AS k0, CAST(COALESCE(SUM(p0), 0) AS BIGINT) AS a0, CAST(COALESCE(SUM(p1), 0) AS BIGINT) AS a1, CAST(SUM(p2) AS BIGINT) AS a2, MIN(p3) AS a3, MAX(p4) AS a4 FROM (SELECT status AS r0, loans AS p0, loan_amount_count AS p1, loan_amount_sum AS p2, loan_amount_min AS p3, loan_amount_max AS p4 FROM loan_totals_status) i GROUP BY k0"),
        "{}",
        c.sql
    );
    // A distinct count cannot be merged from partials: mapped row by row.
    let mut distinct = stages.clone();
    distinct
        .aggregates
        .push(Aggregate::CountDistinct("id".into()));
    let c = compile(&distinct, Some(&admin()), true, true).unwrap();
    assert!(c.sql.contains("CASE l.status WHEN"), "{}", c.sql);
}

#[tokio::test]
async fn pre_aggregated_and_row_by_row_mapping_give_the_same_rows() {
    // Arrange: a few loans of an officer (a scope the totals do not count), two statuses to
    // one label, nulls among the amounts.
    let (_dir, db) = scratch_sqlite().await;
    let Db::Sqlite(pool) = &db else {
        unreachable!()
    };
    for (n, status, amount) in [
        (1, "Loan Open", Some(10_000i64)),
        (2, "Loan Open", None),
        (3, "Loan Funded", Some(25_000)),
        (4, "Loan Closed", Some(7_000)),
        (5, "Loan Approved", Some(1_000)),
    ] {
        sqlx::query("INSERT INTO loan_keys (key, id) VALUES (?1, ?2)")
            .bind(n)
            .bind(format!("id-{n}"))
            .execute(pool)
            .await
            .unwrap();
        sqlx::query("INSERT INTO loans (key, id, search_key, status, loan_amount, loan_officer_id) VALUES (?1, ?2, '', ?3, ?4, 'o')")
            .bind(n)
            .bind(format!("id-{n}"))
            .bind(status)
            .bind(amount)
            .execute(pool)
            .await
            .unwrap();
    }
    let map = vec![
        ("Loan Funded".to_string(), "Done".to_string()),
        ("Loan Closed".to_string(), "Done".to_string()),
        ("Loan Open".to_string(), "Open".to_string()),
    ];
    let aggregates = vec![
        Aggregate::Count,
        Aggregate::CountOf("loanAmount".into()),
        Aggregate::Sum("loanAmount".into()),
        Aggregate::Min("loanAmount".into()),
        Aggregate::Max("loanAmount".into()),
    ];
    let merged = Query {
        group_by: vec![Key::Mapped(
            "status".into(),
            map.clone(),
            Some("Other".into()),
        )],
        aggregates: aggregates.clone(),
        ..q(Dataset::Loans)
    };
    // The same query with a distinct-on (each loan is its own row) is mapped row by row.
    let row_by_row = Query {
        distinct_on: Some("id".into()),
        ..merged.clone()
    };

    // Act
    let store = ReportStore::of(&db);
    let a = run(
        &store,
        &merged,
        Some(&concierge()),
        true,
        Allowance::standard(),
    )
    .await
    .unwrap();
    let b = run(
        &store,
        &row_by_row,
        Some(&concierge()),
        true,
        Allowance::standard(),
    )
    .await
    .unwrap();

    // Assert
    assert_eq!(a.rows, b.rows);
    assert_eq!(
        a.rows[0],
        vec![
            Value::Text("Done".into()),
            Value::Integer(2),
            Value::Integer(2),
            Value::Decimal("3.2".into()),
            Value::Decimal("0.7".into()),
            Value::Decimal("2.5".into()),
        ]
    );
    assert_eq!(a.rows[1][0], Value::Text("Open".into()));
    assert_eq!(
        a.rows[1][1..4],
        [
            Value::Integer(2),
            Value::Integer(1),
            Value::Decimal("1".into())
        ]
    );
}
