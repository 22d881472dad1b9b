//! The planners against each other and against the rows: history read alone (the period sets in
//! `period_sets.rs`), covering indexes, pre-aggregated partials.

use super::*;
use crate::data::query::columns::P;

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
