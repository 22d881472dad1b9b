//! Which milestone queries the period sets answer (whole months and weeks, the funnel, the raw
//! status, a person's loan rows) and which de-duplicate the history rows instead.

use super::*;
use crate::data::values::parse_instant;

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
