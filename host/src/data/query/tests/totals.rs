//! The snapshot's totals (schema v11, per company v12): which queries read them
//! (organisation-wide or one company's, no filter, keys of one table, month-exact bounds on
//! that table's date, totalled aggregates) and which read the loans; the statement they
//! compile to.

use super::*;
use crate::data::query::columns::P;

fn totalled(group_by: Vec<Key>, predicates: Vec<(String, Condition)>) -> Query {
    Query {
        predicates,
        group_by,
        aggregates: vec![
            Aggregate::Count,
            Aggregate::CountOf("lockedCompensation".into()),
            Aggregate::Sum("loanAmount".into()),
            Aggregate::Min("estimatedCompensation".into()),
            Aggregate::Max("loanAmount".into()),
        ],
        ..q(Dataset::Loans)
    }
}

fn field(name: &str) -> Key {
    Key::Field(name.into())
}

fn month_start(date: &str, at: &str) -> (String, Condition) {
    (date.into(), Condition::Ge(Value::Timestamp(at.into())))
}

fn table_of(query: &Query, scope: &Scope) -> Option<String> {
    let c = compile(query, Some(scope), true, false).unwrap();
    let at = c
        .sql
        .find("FROM loan_totals_")
        .or_else(|| c.sql.find("FROM loan_company_totals_"))?
        + 5;
    let end = c.sql[at..].find([' ', ')']).map_or(c.sql.len(), |e| at + e);
    Some(c.sql[at..end].to_string())
}

#[test]
fn each_table_of_totals_answers_its_keys_organisation_wide_and_for_a_company() {
    let status_months = || ("statusDate".to_string(), Condition::IsNotNull);
    let cases = [
        (vec![field("status")], vec![], "loan_totals_status"),
        (vec![field("loanType")], vec![], "loan_totals_type"),
        (vec![field("purpose")], vec![], "loan_totals_purpose"),
        (
            vec![field("loanOfficerId"), field("loanOfficerName")],
            vec![],
            "loan_totals_officer",
        ),
        (
            vec![field("loanOfficerName")],
            vec![],
            "loan_totals_officer",
        ),
        (
            vec![field("referringAgentId")],
            vec![],
            "loan_totals_referrer",
        ),
        (
            vec![Key::Mapped(
                "status".into(),
                vec![("Loan Open".into(), "Open".into())],
                Some("Other".into()),
            )],
            vec![],
            "loan_totals_status",
        ),
        (
            vec![Key::Period("statusDate".into(), PeriodUnit::Month)],
            vec![status_months()],
            "loan_totals_status_months",
        ),
        (
            vec![Key::Period("estimatedClosingDate".into(), PeriodUnit::Year)],
            vec![month_start("estimatedClosingDate", "2026-03-01T00:00:00Z")],
            "loan_totals_closing_months",
        ),
        (
            vec![Key::Period("updated".into(), PeriodUnit::Quarter)],
            vec![],
            "loan_totals_updated_months",
        ),
        // No key: every loan once (the statuses'), or the months a bound keeps.
        (vec![], vec![], "loan_totals_status"),
        (
            vec![],
            vec![month_start("updated", "2026-03-01T00:00:00Z")],
            "loan_totals_updated_months",
        ),
    ];
    for (keys, predicates, table) in cases {
        let query = totalled(keys, predicates);
        assert_eq!(
            table_of(&query, &admin()).as_deref(),
            Some(table),
            "{query:?}"
        );
        // A company's loans: its rows of the same totals per company (schema v12), first in
        // the `WHERE`, its id a parameter before the bounds'.
        let by_company = table.replace("loan_totals_", "loan_company_totals_");
        assert_eq!(
            table_of(&query, &company()).as_deref(),
            Some(by_company.as_str()),
            "{query:?}"
        );
        let c = compile(&query, Some(&company()), true, false).unwrap();
        assert!(
            c.sql
                .contains(&format!("FROM {by_company} WHERE company_id = ?")),
            "{}",
            c.sql
        );
        let company_at = c
            .params
            .iter()
            .position(|p| matches!(p, P::T(v) if v == "c"))
            .expect("the company's id");
        assert!(
            c.params[company_at + 1..]
                .iter()
                .all(|p| matches!(p, P::I(_))),
            "{:?}",
            c.params
        );
        // Any other scope reads its own loans: an Agent's, a ConciergeKey's, a company's
        // beside another role's.
        let mixed = Scope {
            originated_by: Some("me".into()),
            ..company()
        };
        for scope in [agent(), concierge(), mixed] {
            assert_eq!(table_of(&query, &scope), None, "{query:?}");
        }
    }
}

#[test]
fn what_the_totals_do_not_hold_is_read_from_the_loans() {
    let by_status = totalled(vec![field("status")], vec![]);
    let mut cases = Vec::new();
    // A filter, a distinct-on, a distinct count, a field the totals do not hold.
    let mut filtered = by_status.clone();
    filtered.filter = Some(json_filter("searchText", "smith"));
    cases.push(filtered);
    let mut distinct = by_status.clone();
    distinct.distinct_on = Some("id".into());
    cases.push(distinct);
    for extra in [
        Aggregate::CountDistinct("loanAmount".into()),
        Aggregate::Max("propertyState".into()),
        Aggregate::Sum("updated".into()),
    ] {
        let mut q = by_status.clone();
        q.aggregates.push(extra);
        cases.push(q);
    }
    // Keys of two tables, a key the totals do not count, a week, a period beside a field.
    cases.push(totalled(vec![field("status"), field("loanType")], vec![]));
    cases.push(totalled(
        vec![field("loanOfficerId"), field("referringAgentName")],
        vec![],
    ));
    cases.push(totalled(vec![field("propertyState")], vec![]));
    cases.push(totalled(
        vec![Key::Period("updated".into(), PeriodUnit::Week)],
        vec![],
    ));
    cases.push(totalled(
        vec![
            Key::Period("updated".into(), PeriodUnit::Month),
            field("status"),
        ],
        vec![],
    ));
    // Predicates: inside a month, on another date than the key's, on a field.
    cases.push(totalled(
        vec![Key::Period("updated".into(), PeriodUnit::Month)],
        vec![month_start("updated", "2026-03-01T00:00:00.001Z")],
    ));
    cases.push(totalled(
        vec![Key::Period("updated".into(), PeriodUnit::Month)],
        vec![month_start("statusDate", "2026-03-01T00:00:00Z")],
    ));
    cases.push(totalled(
        vec![field("status")],
        vec![month_start("statusDate", "2026-03-01T00:00:00Z")],
    ));
    cases.push(totalled(
        vec![],
        vec![(
            "status".into(),
            Condition::Eq(Value::Text("Loan Open".into())),
        )],
    ));
    for query in cases {
        for scope in [admin(), company()] {
            let c = compile(&query, Some(&scope), true, false);
            match c {
                Ok(c) => assert!(!c.sql.contains("totals_"), "{query:?}: {}", c.sql),
                // A text summed is refused as before.
                Err(e) => assert!(e.to_string().contains("cannot be summed"), "{e}"),
            }
        }
    }
}

#[test]
fn the_totals_merge_counts_sums_minimums_and_maximums() {
    for postgres in [false, true] {
        // Act: no key, an officer's id and name (the table's whole key), an officer's id.
        let compiled = |keys: &[&str], scope: Scope| {
            let keys = keys.iter().map(|k| field(k)).collect();
            compile(&totalled(keys, vec![]), Some(&scope), true, postgres).unwrap()
        };
        let none = compiled(&[], admin());
        let officers = compiled(&["loanOfficerId", "loanOfficerName"], admin());
        let officer_ids = compiled(&["loanOfficerId"], admin());

        // Assert: counts summed (0 over no rows, as `COUNT`), sums summed, minimums and
        // maximums taken again; no group without a key; the partials by name.
        let bigint = if postgres { "BIGINT" } else { "INTEGER" };
        let merged = format!(
            "CAST(COALESCE(SUM(p0), 0) AS {bigint}) AS a0, CAST(COALESCE(SUM(p1), 0) AS {bigint}) AS a1, \
             CAST(SUM(p2) AS {bigint}) AS a2, MIN(p3) AS a3, MAX(p4) AS a4"
        );
        let partials = "loans AS p0, locked_compensation_count AS p1, loan_amount_sum AS p2, \
                        estimated_compensation_min AS p3, loan_amount_max AS p4";
        assert!(
            none.sql.contains(&format!(
                "SELECT {merged} FROM (SELECT {partials} FROM loan_totals_status) i"
            )),
            "{}",
            none.sql
        );
        assert!(
            officer_ids.sql.contains(&format!(
                "SELECT r0 AS k0, {merged} FROM (SELECT loan_officer_id AS r0, {partials} \
                 FROM loan_totals_officer) i GROUP BY k0"
            )),
            "{}",
            officer_ids.sql
        );
        // The table's whole key (an officer's id and name): its rows as they are.
        assert!(
            officers.sql.contains(&format!(
                "SELECT r0 AS k0, r1 AS k1, p0 AS a0, p1 AS a1, p2 AS a2, p3 AS a3, p4 AS a4 \
                 FROM (SELECT loan_officer_id AS r0, loan_officer_name AS r1, {partials} \
                 FROM loan_totals_officer) i"
            )) && !officers.sql.contains("GROUP BY"),
            "{}",
            officers.sql
        );
        assert!(none.params.is_empty() && officers.params.is_empty());

        // A company's officers: the company's rows as they are (its whole key after the
        // company); its officers by id alone merged as the snapshot's are.
        let company_officers = compiled(&["loanOfficerId", "loanOfficerName"], company());
        let company_ids = compiled(&["loanOfficerId"], company());
        assert!(
            company_officers.sql.contains(&format!(
                "SELECT r0 AS k0, r1 AS k1, p0 AS a0, p1 AS a1, p2 AS a2, p3 AS a3, p4 AS a4 \
                 FROM (SELECT loan_officer_id AS r0, loan_officer_name AS r1, {partials} \
                 FROM loan_company_totals_officer WHERE company_id = ?) i"
            )) && !company_officers.sql.contains("GROUP BY"),
            "{}",
            company_officers.sql
        );
        assert!(
            company_ids.sql.contains(&format!(
                "SELECT r0 AS k0, {merged} FROM (SELECT loan_officer_id AS r0, {partials} \
                 FROM loan_company_totals_officer WHERE company_id = ?) i GROUP BY k0"
            )),
            "{}",
            company_ids.sql
        );
    }
    // Names are read only by those who may: the totals check them as the loans do.
    let names = totalled(vec![field("referringAgentName")], vec![]);
    assert!(compile(&names, Some(&admin()), false, false).is_err());
}
