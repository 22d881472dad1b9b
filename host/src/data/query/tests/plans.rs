//! How PostgreSQL is told to plan a statement (`plans_for`, the period sets' own rule): one
//! generic plan per session for a person's statements that nothing but the scope's indexes
//! can serve; every other statement planned for its values.

use super::*;
use crate::data::query::plan::plans_for;

fn stamp(s: &str) -> Value {
    Value::Timestamp(s.into())
}

#[test]
fn a_persons_statements_over_the_loans_alone_get_generic_plans() {
    // Arrange: the pipeline's two queries (no predicate; a window of the status date) and a
    // range of an amount, for each kind of person.
    let window = vec![
        (
            "statusDate".to_string(),
            Condition::Ge(stamp("2026-01-01T00:00:00Z")),
        ),
        (
            "statusDate".to_string(),
            Condition::Lt(stamp("2026-04-01T00:00:00Z")),
        ),
    ];
    let amounts = vec![(
        "loanAmount".to_string(),
        Condition::Le(Value::Decimal("500000".into())),
    )];
    let closing_set = vec![("estimatedClosingDate".to_string(), Condition::IsNotNull)];
    let referrer = Scope {
        referred_by: Some("me".into()),
        ..Default::default()
    };
    for scope in [agent(), concierge(), referrer] {
        for predicates in [vec![], window.clone(), amounts.clone(), closing_set.clone()] {
            let query = Query {
                predicates: predicates.clone(),
                ..q(Dataset::Loans)
            };

            // Act
            let plans = plans_for(&query, Some(&scope));

            // Assert
            assert_eq!(plans, Plans::Generic, "{scope:?} {predicates:?}");
        }
    }
}

#[test]
fn statements_another_index_could_serve_are_planned_for_their_values() {
    // Arrange: for a person, each thing a generic plan would intersect with the scope's
    // indexes (it prices a person at thousands of loans); then the scopes that are not a
    // person's.
    let with = |edit: &dyn Fn(&mut Query)| {
        let mut query = q(Dataset::Loans);
        edit(&mut query);
        query
    };
    let personal: Vec<(&str, Query)> = vec![
        (
            "a filter",
            with(&|q| q.filter = Some(r#"{"purposes":["Purchase"]}"#.into())),
        ),
        (
            "a value of a text field",
            with(&|q| {
                q.predicates = vec![(
                    "status".into(),
                    Condition::Eq(Value::Text("Loan Open".into())),
                )]
            }),
        ),
        (
            "a list",
            with(&|q| {
                q.predicates = vec![(
                    "status".into(),
                    Condition::AnyOf(vec![Value::Text("Loan Open".into())]),
                )]
            }),
        ),
        (
            "a range of a text field",
            with(&|q| {
                q.predicates = vec![("status".into(), Condition::Ge(Value::Text("L".into())))]
            }),
        ),
        ("the history's sets", milestones()),
    ];

    // Act / Assert
    for (what, query) in &personal {
        assert_eq!(
            plans_for(query, Some(&agent())),
            Plans::PerCall,
            "an Agent's statement with {what}"
        );
    }
    for scope in [admin(), company()] {
        assert_eq!(
            plans_for(&q(Dataset::Loans), Some(&scope)),
            Plans::PerCall,
            "{scope:?}"
        );
    }
    assert_eq!(
        plans_for(&q(Dataset::DwDeals), None),
        Plans::PerCall,
        "organisation-wide"
    );
}

#[test]
fn a_persons_period_sets_get_generic_plans_with_the_window_on_the_loan_index() {
    // Arrange: an Agent's three months of milestones, by funnel stage and by raw status.
    let window = milestones_between(
        PeriodUnit::Month,
        "2026-01-01T00:00:00Z",
        "2026-04-01T00:00:00Z",
    );
    // A field the person rows (schema v15) do not carry: the sets joined to the loans.
    let person = compile(&window, Some(&agent()), false, true).unwrap();
    let person_sqlite = compile(&window, Some(&agent()), false, false).unwrap();
    let window = Query {
        aggregates: vec![
            Aggregate::Count,
            Aggregate::Sum("loan.lockedCompensation".into()),
        ],
        ..window
    };
    let mut raw = window.clone();
    raw.group_by[1] = Key::Field("milestone".into());
    let mut filtered = window.clone();
    filtered.filter = Some(r#"{"purposes":["Purchase"]}"#.into());
    let row_bounds = "(r.loan_key, r.period_index) >= (l.key, ";
    let period_bounds = "AND r.period_index >= ";

    // Act
    let stage = compile(&window, Some(&agent()), false, true).unwrap();
    let raw = compile(&raw, Some(&agent()), false, true).unwrap();
    let sqlite = compile(&window, Some(&agent()), false, false).unwrap();
    let others = [
        (
            "a filter",
            compile(&filtered, Some(&agent()), false, true).unwrap(),
        ),
        (
            "a company",
            compile(&window, Some(&company()), false, true).unwrap(),
        ),
        (
            "the organisation",
            compile(&window, Some(&admin()), false, true).unwrap(),
        ),
    ];

    // Assert
    assert_eq!(person.plans, Plans::Generic);
    assert_eq!(person_sqlite.plans, Plans::PerCall);
    assert!(person.sql.starts_with("SELECT p.loan_key, p.months"));
    let full = raw
        .full
        .as_deref()
        .expect("the statement that reads unlisted rows");
    for c in [&stage, &raw, full] {
        assert_eq!(c.plans, Plans::Generic);
        assert!(
            c.sql.contains(row_bounds)
                && c.sql.contains("(r.loan_key, r.period_index) <= (l.key, ")
                && !c.sql.contains(period_bounds),
            "{}",
            c.sql
        );
    }
    assert_eq!(sqlite.plans, Plans::PerCall);
    assert!(
        sqlite.sql.contains(period_bounds) && !sqlite.sql.contains(row_bounds),
        "SQLite plans each statement once per connection: {}",
        sqlite.sql
    );
    for (what, c) in &others {
        assert_eq!(c.plans, Plans::PerCall, "{what}");
        assert!(!c.sql.contains(row_bounds), "{what}: {}", c.sql);
    }
}

#[test]
fn compiled_statements_carry_the_plans_of_their_rule() {
    // A person's loans without a filter on PostgreSQL, as `plans_for` says; never on SQLite.
    let loans = q(Dataset::Loans);
    assert_eq!(
        compile(&loans, Some(&agent()), false, true).unwrap().plans,
        Plans::Generic
    );
    assert_eq!(
        compile(&loans, Some(&agent()), false, false).unwrap().plans,
        Plans::PerCall
    );
    assert_eq!(
        compile(&loans, Some(&company()), false, true)
            .unwrap()
            .plans,
        Plans::PerCall
    );
}

#[test]
fn a_persons_null_checks_of_numbers_and_instants_are_kept_off_their_indexes_on_postgresql() {
    // Arrange: a month group-by of the closing date reads only loans that have one.
    let query = Query {
        predicates: vec![("estimatedClosingDate".into(), Condition::IsNotNull)],
        ..q(Dataset::Loans)
    };

    // Act
    let person = compile(&query, Some(&agent()), false, true).unwrap();
    // (A distinct count, which the company's totals do not hold: its loans are read.)
    let read = Query {
        aggregates: vec![Aggregate::CountDistinct("loanOfficerId".into())],
        ..query.clone()
    };
    let company = compile(&read, Some(&company()), false, true).unwrap();
    let sqlite = compile(&query, Some(&agent()), false, false).unwrap();

    // Assert: as the person's ranges are, for the generic plan; a company's statement is
    // planned for its values and keeps the column as it is, as SQLite does.
    assert!(
        person.sql.contains("+l.estimated_closing_date IS NOT NULL"),
        "{}",
        person.sql
    );
    assert_eq!(person.plans, Plans::Generic);
    for c in [&company, &sqlite] {
        assert!(
            c.sql.contains("l.estimated_closing_date IS NOT NULL")
                && !c.sql.contains("+l.estimated_closing_date"),
            "{}",
            c.sql
        );
    }
}
