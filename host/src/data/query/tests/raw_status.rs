//! A person's milestone report by raw status: the sets of their loans counted alone first,
//! the statement that reads unlisted statuses' rows only when a set holds one.

use super::*;
use crate::data::query::columns::P;

#[test]
fn a_persons_raw_status_counts_its_sets_alone_first() {
    for postgres in [false, true] {
        let mut raw_week = milestones_between(
            PeriodUnit::Week,
            "2026-01-05T00:00:00Z",
            "2026-01-26T00:00:00Z",
        );
        raw_week.group_by[1] = Key::Field("milestone".into());
        // An Agent's loan rows (schema v15), their sets folded so that a set with the
        // unlisted bit asks for the full statement, which reads those rows.
        let person = compile(&raw_week, Some(&agent()), false, postgres).unwrap();
        assert_eq!(
            person.sql,
            "SELECT p.loan_key, p.weeks, p.loan_amount FROM person_loans p WHERE (p.person_id = ?)"
        );
        assert!(person
            .fold
            .as_ref()
            .is_some_and(|f| f.sets_only && f.packed.is_some()));
        let person_full = person.full.as_deref().expect("the joined statement");
        assert!(
            person_full.sql.contains("h.week_index = x.pi") && person_full.full.is_none(),
            "{}",
            person_full.sql
        );
        // A field the loan rows do not carry: joined to an Agent's loans, first the sets
        // alone (no unlisted status's rows, no set kept per loan), folded so that a set with
        // the unlisted bit asks for the full statement, which reads those rows.
        raw_week
            .aggregates
            .push(Aggregate::Max("loan.lockedCompensation".into()));
        let c = compile(&raw_week, Some(&agent()), false, postgres).unwrap();
        let full = c
            .full
            .as_deref()
            .expect("the statement that reads unlisted rows");
        assert!(
            c.sql.contains(
                "FROM los_history_weeks r JOIN loans l ON l.key = r.loan_key WHERE ((l.loan_officer_id"
            ) && c.sql.contains("GROUP BY r.period_index, r.status_bits)")
                && !c.sql.contains("los_status_history")
                && !c.sql.contains(" AS lk"),
            "{}",
            c.sql
        );
        assert!(
            full.sql.contains(
                "FROM los_history_weeks r JOIN loans l ON l.key = r.loan_key WHERE ((l.loan_officer_id"
            ) && full.sql.contains("h.week_index = x.pi")
                && full.sql.contains("GROUP BY r.period_index, r.status_bits, lk"),
            "{}",
            full.sql
        );
        assert!(c.fold.as_ref().is_some_and(|f| f.sets_only));
        assert!(full.fold.as_ref().is_some_and(|f| !f.sets_only) && full.full.is_none());
        assert_eq!(
            format!("{:?} {:?}", c.params, c.outs),
            format!("{:?} {:?}", full.params, full.outs)
        );
        // A company's loans, or an organisation's filtered, nearly always hold a status
        // without a bit: the full statement alone, whose unlisted statuses are the history
        // rows with that bit of the sets kept one per loan, by the history's key (PostgreSQL
        // held to a lookup per set; SQLite, the sets first).
        let unlisted_rows = if postgres {
            "x CROSS JOIN LATERAL (SELECT h.status AS st FROM los_status_history h WHERE h.loan_key = x.lk \
             AND h.week_index = x.pi AND h.status_bit = 4611686018427387904 OFFSET 0) hh WHERE x.lk IS NOT NULL"
        } else {
            "x CROSS JOIN los_status_history h ON h.loan_key = x.lk AND h.week_index = x.pi \
             AND h.status_bit = 4611686018427387904 WHERE x.lk IS NOT NULL"
        };
        let company = Scope {
            company: Some("company".into()),
            ..Default::default()
        };
        for scope in [company, admin()] {
            let mut filtered = raw_week.clone();
            filtered.filter =
                Some(r#"{"loanOfficerIds":["00000000-0000-4000-8000-000000000001"]}"#.into());
            let c = compile(&filtered, Some(&scope), false, postgres).unwrap();
            assert!(
                c.full.is_none()
                    && c.sql.contains(unlisted_rows)
                    && c.sql.contains(
                        "CASE WHEN (r.status_bits & 4611686018427387904) <> 0 THEN r.loan_key END AS lk"
                    ),
                "{}",
                c.sql
            );
        }
        for statement in [&c, full] {
            let scope_values = statement
                .params
                .iter()
                .filter(|p| matches!(p, P::T(t) if t == "me"))
                .count();
            assert_eq!(
                scope_values, 3,
                "the Agent's scope once: the sets are read once"
            );
        }
    }
}
