//! The spec's filter and the input caps: values checked against their vocabulary or form,
//! errors naming the field and the limit; which of its columns keep their indexes.

use super::*;
use crate::data::query::filter::state_code;

#[test]
fn a_property_state_is_a_two_letter_code() {
    assert_eq!(state_code("ca").unwrap(), "CA");
    assert_eq!(state_code(" TX ").unwrap(), "TX");
    assert_eq!(
        state_code("California").unwrap_err(),
        "`California` is not a state code; use the two-letter code: `CA` for California"
    );
    assert_eq!(
        state_code("Calif.").unwrap_err(),
        "`Calif.` is not a two-letter state code (such as `CA` or `TX`)"
    );
    assert!(state_code("C1").is_err());
}

#[test]
fn input_caps_name_the_limit() {
    let all = Scope {
        all: true,
        ..Default::default()
    };
    let mut query = q(Dataset::Loans);
    query.filter = Some(json_filter("searchText", "a b c d e f g h i"));
    assert_eq!(
        compile(&query, Some(&all), true, false).err(),
        Some(QueryError::Invalid(
            "filter: `searchText` has 9 words; at most 8 are allowed".into()
        ))
    );
    let mut query = q(Dataset::Loans);
    query
        .group_by
        .push(Key::Mapped("status".into(), vec![], Some("x".repeat(65))));
    assert_eq!(
        compile(&query, Some(&all), true, false).err(),
        Some(QueryError::Invalid(
            "mapping of `status`: a label of 65 bytes is longer than the 64 allowed".into()
        ))
    );
    let mut query = q(Dataset::Loans);
    query.predicates.push((
        "status".into(),
        Condition::AnyOf(vec![Value::Text("Closed".into()); 201]),
    ));
    assert_eq!(
        compile(&query, Some(&all), true, false).err(),
        Some(QueryError::Invalid(
            "field `status`: any-of has 201 values; at most 200 are allowed".into()
        ))
    );
}

#[test]
fn a_map_without_entries_is_its_fallback() {
    let all = Scope {
        all: true,
        ..Default::default()
    };
    let mut query = q(Dataset::Loans);
    query
        .group_by
        .push(Key::Mapped("status".into(), vec![], Some("Other".into())));
    let c = compile(&query, Some(&all), true, false).unwrap();
    assert!(c.sql.contains("CAST(? AS TEXT) AS k0"), "{}", c.sql);
    assert!(!c.sql.contains("CASE"), "{}", c.sql);
}

#[test]
fn filter_errors_name_the_field() {
    let mut query = q(Dataset::Loans);
    query.filter = Some(r#"{"loanAmountMin": "lots"}"#.into());
    let all = Scope {
        all: true,
        ..Default::default()
    };
    assert_eq!(
        compile(&query, Some(&all), true, false).err(),
        Some(QueryError::Invalid(
            "filter: `loanAmountMin`: `lots` is not a decimal number".into()
        ))
    );
    query.filter = Some(r#"{"officer": 1}"#.into());
    assert!(
        matches!(compile(&query, Some(&all), true, false), Err(QueryError::Invalid(m)) if m.starts_with("filter: unknown field `officer`"))
    );
}

#[test]
fn a_scoped_callers_filter_lists_and_ranges_yield_to_the_scopes_index() {
    // Arrange: the wide filter of the report matrix, with an officer id beside it, and a
    // predicate's date range (the pipeline's trend).
    let wide = Query {
        filter: Some(
            r#"{"statuses": ["Loan Open", "Loan Funded"], "loanTypes": ["FHA"],
                "loanAmountMin": 100000, "statusDateFrom": "2025-01-01",
                "referringAgentId": "6f1c2b9e-7a3d-4c55-9e2a-0b8d4f3e1a77"}"#
                .into(),
        ),
        predicates: vec![(
            "updated".into(),
            Condition::Lt(Value::Timestamp("2026-11-01T00:00:00Z".into())),
        )],
        group_by: vec![Key::Field("status".into())],
        ..q(Dataset::Loans)
    };
    for (scope, postgres, lists, ranges, predicates) in [
        (agent(), false, "+", "+", ""),
        (admin(), false, "", "", ""),
        (agent(), true, "", "+", "+"),
        (admin(), true, "", "", ""),
    ] {
        // Act
        let c = compile(&wide, Some(&scope), true, postgres).unwrap();
        // Assert: for a scoped caller, lists and ranges are `+col` on SQLite; on PostgreSQL
        // the numeric ranges of filters and predicates are (a generic plan took the date
        // index); an id's equality keeps its index everywhere.
        for part in [
            format!("{lists}l.status IN ("),
            format!("{lists}l.loan_type IN ("),
            format!("{ranges}l.loan_amount >= "),
            format!("{ranges}l.status_date >= "),
            format!("{predicates}l.updated < "),
        ] {
            assert!(c.sql.contains(&part), "{part}: {}", c.sql);
            assert!(!c.sql.contains(&format!("+{part}")), "{part}: {}", c.sql);
        }
        assert!(
            c.sql.contains(" l.referring_agent_id = ") && !c.sql.contains("+l.referring_agent_id"),
            "{}",
            c.sql
        );
    }

    // A company's scope on SQLite: the statuses keep the scope's index, which holds them
    // right after the company; the other lists and ranges yield to it.
    let sql = compile(&wide, Some(&company()), true, false).unwrap().sql;
    for (part, written) in [
        (" l.status IN (", true),
        ("+l.status IN (", false),
        ("+l.loan_type IN (", true),
        ("+l.status_date >= ", true),
    ] {
        assert_eq!(sql.contains(part), written, "{part}: {sql}");
    }
}

#[tokio::test]
async fn a_companys_group_by_status_reads_the_scopes_index_in_order_on_sqlite() {
    // Arrange: a Processor's scope (one company), grouped by status and by a mapped status,
    // with an aggregate its totals (schema v12) do not hold: the company's loans are read.
    let (_dir, db) = scratch_sqlite().await;
    let Db::Sqlite(pool) = &db else {
        unreachable!()
    };
    let company = company();
    let by_status = Query {
        group_by: vec![Key::Field("status".into())],
        aggregates: vec![
            Aggregate::Count,
            Aggregate::Sum("loanAmount".into()),
            Aggregate::Max("propertyState".into()),
        ],
        ..q(Dataset::Loans)
    };
    let stages = Query {
        group_by: vec![Key::Mapped(
            "status".into(),
            vec![("Loan Open".into(), "Open".into())],
            Some("Other".into()),
        )],
        ..by_status.clone()
    };
    for query in [by_status.clone(), stages] {
        // Act
        let c = compile(&query, Some(&company), true, false).unwrap();
        let plan: Vec<String> = sqlx::query(&format!("EXPLAIN QUERY PLAN {}", c.sql))
            .bind("c")
            .fetch_all(pool)
            .await
            .unwrap()
            .iter()
            .map(|r| sqlx::Row::get::<String, _>(r, "detail"))
            .collect();
        // Assert: the loans grouped right over the company's index by the key as is (read
        // in the index's order), then the few raw groups grouped again by key or label
        // (the one sort in the plan).
        let plan = plan.join(" | ");
        assert!(c.sql.contains("(SELECT l.status AS r0,"), "{}", c.sql);
        assert!(c.sql.contains("GROUP BY r0)"), "{}", c.sql);
        assert!(
            plan.contains("SEARCH l USING INDEX loans_company (company_id=?)"),
            "{plan}"
        );
        assert_eq!(
            plan.matches("TEMP B-TREE FOR GROUP BY").count(),
            1,
            "{plan}"
        );
    }
    // An Agent's scope (an `OR` of three) keeps the key off the indexes.
    let c = compile(&by_status, Some(&agent()), true, false).unwrap();
    assert!(c.sql.contains("+l.status"), "{}", c.sql);
}
