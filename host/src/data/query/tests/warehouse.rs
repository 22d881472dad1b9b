//! The warehouse-counts plan (schema v8): which windows take it, and what it reads.

use super::*;
use crate::data::history_keys::{month_index, week_index};

/// The warehouse report's shape: distinct loans per (period, milestone) in [from, to).
fn warehouse(unit: PeriodUnit, from: &str, to: &str) -> Query {
    let mut q = q(Dataset::DwLoanMilestones);
    q.group_by = vec![
        Key::Period("occurredAt".into(), unit),
        Key::Field("milestone".into()),
    ];
    q.aggregates = vec![Aggregate::CountDistinct("loanId".into())];
    q.predicates = vec![
        (
            "occurredAt".into(),
            Condition::Ge(Value::Timestamp(from.into())),
        ),
        (
            "occurredAt".into(),
            Condition::Lt(Value::Timestamp(to.into())),
        ),
    ];
    q
}

#[test]
fn whole_periods_read_the_counts_and_partial_ends_the_rows() {
    let ms = |s: &str| parse_instant(s).unwrap();
    for postgres in [false, true] {
        // Arrange / Act: whole months; then a window from mid-January to mid-April.
        let whole = compile(
            &warehouse(PeriodUnit::Month, "2026-01-01", "2026-04-01"),
            None,
            true,
            postgres,
        )
        .unwrap();
        let partial = compile(
            &warehouse(
                PeriodUnit::Month,
                "2026-01-15T00:00:00Z",
                "2026-04-10T00:00:00Z",
            ),
            None,
            true,
            postgres,
        )
        .unwrap();

        // Assert: the months' counts, no row; then the whole months between, and each end's
        // rows bounded by the window and the whole periods.
        let (jan, mar) = (month_index(ms("2026-01-15")), month_index(ms("2026-03-15")));
        assert!(
            whole.sql.contains(&format!(
                "FROM dw_milestone_counts_months c WHERE c.period_index >= {jan} AND c.period_index <= {mar}"
            )) && !whole.sql.contains("dw_loan_milestones"),
            "{}",
            whole.sql
        );
        assert!(whole.params.is_empty());
        assert!(
            partial.sql.contains(&format!(
                "c.period_index >= {} AND c.period_index <= {mar}",
                jan + 1
            )) && partial.sql.matches("COUNT(DISTINCT m.loan_key)").count() == 2,
            "{}",
            partial.sql
        );
        let bounds: Vec<i64> = partial
            .params
            .iter()
            .filter_map(|p| match p {
                P::I(i) => Some(*i),
                P::T(_) => None,
            })
            .collect();
        assert_eq!(
            bounds,
            [
                ms("2026-01-15T00:00:00Z"),
                ms("2026-02-01T00:00:00Z") - 1,
                ms("2026-04-01T00:00:00Z"),
                ms("2026-04-10T00:00:00Z") - 1
            ]
        );
        // Weeks: Monday to Monday is whole.
        let weeks = compile(
            &warehouse(PeriodUnit::Week, "2026-01-05", "2026-01-26"),
            None,
            true,
            postgres,
        )
        .unwrap();
        let (first, last) = (week_index(ms("2026-01-05")), week_index(ms("2026-01-25")));
        assert!(
            weeks.sql.contains(&format!(
                "FROM dw_milestone_counts_weeks c WHERE c.period_index >= {first} AND c.period_index <= {last}"
            )) && !weeks.sql.contains("dw_loan_milestones"),
            "{}",
            weeks.sql
        );

        // Not these: no whole period, quarters, rows counted instead of loans, another key,
        // an unbounded window: the rows, grouped as they are.
        let row_by_row = |q: &Query| {
            let c = compile(q, None, true, postgres).unwrap();
            !c.sql.contains("dw_milestone_counts")
        };
        assert!(row_by_row(&warehouse(
            PeriodUnit::Month,
            "2026-01-03",
            "2026-01-20"
        )));
        let mut quarters = warehouse(PeriodUnit::Month, "2026-01-01", "2026-04-01");
        quarters.group_by[0] = Key::Period("occurredAt".into(), PeriodUnit::Quarter);
        assert!(row_by_row(&quarters));
        let mut rows = warehouse(PeriodUnit::Month, "2026-01-01", "2026-04-01");
        rows.aggregates = vec![Aggregate::Count];
        assert!(row_by_row(&rows));
        let mut by_loan = warehouse(PeriodUnit::Month, "2026-01-01", "2026-04-01");
        by_loan.group_by[1] = Key::Field("loanId".into());
        assert!(row_by_row(&by_loan));
        let mut open = warehouse(PeriodUnit::Month, "2026-01-01", "2026-04-01");
        open.predicates.pop();
        assert!(row_by_row(&open));
    }
}
