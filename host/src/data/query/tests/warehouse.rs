//! The warehouse-counts plan (schema v8): which windows take it, and what it reads.

use super::*;
use crate::data::history_keys::{month_index, week_index};
use crate::data::values::parse_instant;

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
        let bounds = int_params(&partial);
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
        // a condition that is not a bound: the rows, grouped as they are.
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
        let mut not_a_bound = warehouse(PeriodUnit::Month, "2026-01-01", "2026-04-01");
        not_a_bound.predicates[1].1 = Condition::Ne(Value::Timestamp("2026-04-01".into()));
        assert!(row_by_row(&not_a_bound));
        let mut other_condition = warehouse(PeriodUnit::Month, "2026-01-01", "2026-04-01");
        other_condition
            .predicates
            .push(("occurredAt".into(), Condition::IsNotNull));
        assert!(row_by_row(&other_condition));
    }
}

/// The pipeline's shape: deals per (period, stage) created before `to`, from `from` if given.
fn deals(unit: PeriodUnit, from: Option<&str>, to: &str) -> Query {
    let mut q = q(Dataset::DwDeals);
    q.group_by = vec![
        Key::Period("createdAt".into(), unit),
        Key::Field("stage".into()),
    ];
    q.aggregates = vec![Aggregate::CountDistinct("id".into())];
    q.predicates = vec![(
        "createdAt".into(),
        Condition::Lt(Value::Timestamp(to.into())),
    )];
    if let Some(from) = from {
        q.predicates.push((
            "createdAt".into(),
            Condition::Ge(Value::Timestamp(from.into())),
        ));
    }
    q
}

#[test]
fn deals_per_stage_read_their_counts_and_an_open_start_is_the_first_instant() {
    let ms = |s: &str| parse_instant(s).unwrap();
    for postgres in [false, true] {
        // Arrange / Act: all history by month up to the end of 2026-03-18 (a Wednesday);
        // one quarter by week; all history by week.
        let plan = |q: &Query| compile(q, None, true, postgres).unwrap();
        let months = plan(&deals(PeriodUnit::Month, None, "2026-03-19T00:00:00Z"));
        let quarter = plan(&deals(PeriodUnit::Week, Some("2026-07-01"), "2026-10-01"));
        let weeks = plan(&deals(PeriodUnit::Week, None, "2026-03-19T00:00:00Z"));

        // Assert: every whole month from the year 0000's first to February's counts, then
        // March's rows up to the bound; the quarter's whole weeks (Monday 6 July to Sunday
        // 27 September) from the counts, its ends from the rows; the weeks' open start is a
        // partial week (0000-01-01 is a Saturday) read from the rows.
        let first = ms("0000-01-01T00:00:00Z");
        assert!(
            months.sql.contains(&format!(
                "FROM dw_deal_counts_months c WHERE c.period_index >= {} AND c.period_index <= {}",
                month_index(first),
                month_index(ms("2026-02-15"))
            )) && months.sql.contains("c.stage AS ms, c.deals AS n")
                && months.sql.matches("FROM dw_deals m").count() == 1
                && months.sql.contains("COUNT(DISTINCT m.id)"),
            "{}",
            months.sql
        );
        assert_eq!(
            int_params(&months),
            [ms("2026-03-01T00:00:00Z"), ms("2026-03-19T00:00:00Z") - 1]
        );
        assert!(
            quarter.sql.contains(&format!(
                "FROM dw_deal_counts_weeks c WHERE c.period_index >= {} AND c.period_index <= {}",
                week_index(ms("2026-07-06")),
                week_index(ms("2026-09-27"))
            )),
            "{}",
            quarter.sql
        );
        assert_eq!(
            int_params(&quarter),
            [
                ms("2026-07-01T00:00:00Z"),
                ms("2026-07-06T00:00:00Z") - 1,
                ms("2026-09-28T00:00:00Z"),
                ms("2026-10-01T00:00:00Z") - 1
            ]
        );
        let monday = ms("0000-01-03T00:00:00Z");
        assert_eq!(week_index(monday), week_index(first) + 1);
        assert_eq!(
            int_params(&weeks),
            [
                first,
                monday - 1,
                ms("2026-03-16T00:00:00Z"),
                ms("2026-03-19T00:00:00Z") - 1
            ]
        );

        // Rows counted instead of deals, or a stage of its own making: the rows.
        let mut rows = deals(PeriodUnit::Month, None, "2026-03-01");
        rows.aggregates = vec![Aggregate::Count];
        assert!(!plan(&rows).sql.contains("dw_deal_counts"));
    }
}
