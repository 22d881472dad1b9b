//! The security rules of the compiler: the scope always AND-ed in, the name-reading right in
//! every form a query reads a field, no input text in the SQL.

use super::*;
use crate::data::query::columns::P;

#[test]
fn scope_is_always_anded_for_loans() {
    let scope = Scope {
        originated_by: Some("me".into()),
        ..Default::default()
    };
    let c = compile(&q(Dataset::Loans), Some(&scope), false, false).unwrap();
    assert!(c.sql.contains("WHERE ((l.loan_officer_id = ? OR l.loan_assistant_id = ? OR l.referring_agent_id = ?))"), "{}", c.sql);
    assert!(
        compile(&q(Dataset::Loans), None, false, false).is_err(),
        "no scope, no query"
    );
}

/// Every way a query can read a field checks the name-reading right, on both engines and
/// under a caller's scope as well as organisation-wide: losing one (a predicate, say)
/// would give a caller without the right a yes/no oracle on officer names.
#[test]
fn name_fields_are_refused_in_every_form_without_the_right() {
    let forms = name_forms();
    let mine = Scope {
        originated_by: Some("me".into()),
        ..Default::default()
    };
    for (form, query) in &forms {
        for postgres in [false, true] {
            for scope in [&mine, &admin()] {
                let refused = compile(query, Some(scope), false, postgres);
                assert!(
                    matches!(&refused, Err(QueryError::Denied(m)) if m.ends_with("is readable only by callers with Admin, Processor or ConciergeKey")),
                    "{form} (postgres {postgres}, all {}): {:?}",
                    scope.all,
                    refused.map(|c| c.sql)
                );
                let allowed = compile(query, Some(scope), true, postgres);
                assert!(
                    allowed.is_ok(),
                    "{form} with the right: {:?}",
                    allowed.err()
                );
            }
        }
    }
}

/// Every form in which a query can read a person's name: a predicate, a key, an aggregate, a
/// `distinctOn`, on the loans and through a history row's `loan.` path.
fn name_forms() -> Vec<(&'static str, Query)> {
    let text = |s: &str| Value::Text(s.into());
    let on = |dataset: Dataset, edit: &dyn Fn(&mut Query)| {
        let mut query = q(dataset);
        edit(&mut query);
        query
    };
    vec![
        (
            "predicate eq",
            on(Dataset::Loans, &|q| {
                q.predicates = vec![("loanOfficerName".into(), Condition::Eq(text("Ann")))]
            }),
        ),
        (
            "predicate anyOf",
            on(Dataset::Loans, &|q| {
                q.predicates = vec![("processorName".into(), Condition::AnyOf(vec![text("Ann")]))]
            }),
        ),
        (
            "predicate isNotNull",
            on(Dataset::Loans, &|q| {
                q.predicates = vec![("referringAgentName".into(), Condition::IsNotNull)]
            }),
        ),
        (
            "group-by",
            on(Dataset::Loans, &|q| {
                q.group_by = vec![Key::Field("loanOfficerName".into())]
            }),
        ),
        (
            "mapped key",
            on(Dataset::Loans, &|q| {
                q.group_by = vec![Key::Mapped(
                    "referringAgentName".into(),
                    vec![("Ann".into(), "A".into())],
                    Some("Other".into()),
                )]
            }),
        ),
        (
            "min",
            on(Dataset::Loans, &|q| {
                q.aggregates = vec![Aggregate::Min("loanOfficerName".into())]
            }),
        ),
        (
            "max",
            on(Dataset::Loans, &|q| {
                q.aggregates = vec![Aggregate::Max("processorName".into())]
            }),
        ),
        (
            "count-distinct",
            on(Dataset::Loans, &|q| {
                q.aggregates = vec![Aggregate::CountDistinct("loanOfficerName".into())]
            }),
        ),
        (
            "count-of",
            on(Dataset::Loans, &|q| {
                q.aggregates = vec![Aggregate::CountOf("processorName".into())]
            }),
        ),
        (
            "distinctOn",
            on(Dataset::Loans, &|q| {
                q.distinct_on = Some("loanOfficerName".into())
            }),
        ),
        (
            "loan. path group-by",
            on(Dataset::LosStatusHistory, &|q| {
                q.group_by = vec![Key::Field("loan.loanOfficerName".into())]
            }),
        ),
        (
            "loan. path predicate",
            on(Dataset::LosStatusHistory, &|q| {
                q.predicates = vec![("loan.processorName".into(), Condition::Eq(text("Ann")))]
            }),
        ),
        (
            "loan. path mapped, distinct loans per month",
            on(Dataset::LosStatusHistory, &|q| {
                q.group_by = vec![
                    Key::Period("occurredAt".into(), PeriodUnit::Month),
                    Key::Mapped(
                        "loan.loanOfficerName".into(),
                        vec![("Ann".into(), "A".into())],
                        Some("Other".into()),
                    ),
                ];
                q.distinct_on = Some("loanId".into());
            }),
        ),
    ]
}

#[test]
fn strings_never_reach_sql_text() {
    // Arrange: a different hostile text in every place a string can enter.
    // (searchText is split at whitespace into tokens: its text is one token.)
    let evil = |n: u32| match n {
        1 => "x1');drop--table".to_string(),
        _ => format!("x{n}'); drop table loans; --"),
    };
    let mut query = q(Dataset::Loans);
    // (The filter's propertyState takes two letters only; a predicate takes any text.)
    query.filter = Some(serde_json::json!({"searchText": evil(1)}).to_string());
    query
        .predicates
        .push(("propertyState".into(), Condition::Eq(Value::Text(evil(3)))));
    query
        .predicates
        .push(("loanNumber".into(), Condition::Eq(Value::Text(evil(4)))));
    query
        .predicates
        .push(("status".into(), Condition::Ne(Value::Text(evil(2)))));
    query.group_by.push(Key::Mapped(
        "status".into(),
        vec![(evil(5), evil(6))],
        Some(evil(7)),
    ));
    for postgres in [false, true] {
        // Act
        let c = compile(
            &query,
            Some(&Scope {
                all: true,
                ..Default::default()
            }),
            true,
            postgres,
        )
        .unwrap();

        // Assert: no input text in the SQL, every input in a bound parameter, and as many
        // placeholders as parameters.
        let texts: Vec<&str> = c
            .params
            .iter()
            .filter_map(|p| match p {
                P::T(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        for n in 1..=7 {
            let e = evil(n);
            assert!(
                !c.sql.to_lowercase().contains(&format!("x{n}'")),
                "{}",
                c.sql
            );
            assert!(
                texts
                    .iter()
                    .any(|t| t.to_lowercase().contains(&e.to_lowercase())),
                "input {n} is not a parameter: {texts:?}"
            );
        }
        assert!(!c.sql.contains("--") && !c.sql.contains(';'), "{}", c.sql);
        // (`?` is numbered `$n` for PostgreSQL when the statement is bound.)
        let placeholders = c.sql.matches('?').count();
        assert_eq!(placeholders, c.params.len(), "{}", c.sql);
    }
}

#[test]
fn unknown_fields_and_restricted_names() {
    let mut query = q(Dataset::Loans);
    query.group_by.push(Key::Field("borrowerSsn".into()));
    let all = Scope {
        all: true,
        ..Default::default()
    };
    assert!(
        matches!(compile(&query, Some(&all), true, false), Err(QueryError::Invalid(m)) if m.starts_with("unknown field `borrowerSsn`"))
    );
    let mut query = q(Dataset::Loans);
    query.group_by.push(Key::Field("loanOfficerName".into()));
    assert!(matches!(
        compile(&query, Some(&all), false, false),
        Err(QueryError::Denied(_))
    ));
    assert!(compile(&query, Some(&all), true, false).is_ok());
}
