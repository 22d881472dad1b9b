//! A v2 database made from today's: its rows copied into the v2 schema (its migrations only),
//! and what a database holds read back whole (the period sets, the counts, the totals, the
//! people's loans) with the reports' query shapes to compare them by.

use loanhost::data::catalog::Dataset;
use loanhost::data::query::{Aggregate, Condition, Key, PeriodUnit, Query, Value};
use loanhost::data::scope::Scope;
use loanhost::data::Db;
use sqlx::Row;

/// Column kinds, for copying rows between schemas.
#[derive(Clone, Copy)]
pub(super) enum Kind {
    T,
    I,
}
use Kind::{I, T};

/// Copies the rows `select` reads in `from` into `table (cols)` of `to`.
pub(super) async fn copy(
    from: &Db,
    to: &Db,
    select: &str,
    table: &str,
    cols: &[(&str, Kind)],
) -> usize {
    let names: Vec<&str> = cols.iter().map(|(n, _)| *n).collect();
    let marks: Vec<String> = (1..=cols.len())
        .map(|i| {
            if to.engine() == "postgres" {
                format!("${i}")
            } else {
                format!("?{i}")
            }
        })
        .collect();
    let insert = format!(
        "INSERT INTO {table} ({}) VALUES ({})",
        names.join(", "),
        marks.join(", ")
    );
    macro_rules! rows {
        ($pool:expr) => {{
            let rows = sqlx::query(select).fetch_all($pool).await.unwrap();
            rows.iter()
                .map(|r| {
                    cols.iter()
                        .enumerate()
                        .map(|(i, (_, k))| match k {
                            T => (r.get::<Option<String>, _>(i), None),
                            I => (None, r.get::<Option<i64>, _>(i)),
                        })
                        .collect::<Vec<_>>()
                })
                .collect::<Vec<_>>()
        }};
    }
    let rows = match from {
        Db::Sqlite(p) => rows!(p),
        Db::Postgres(p) => rows!(p),
    };
    macro_rules! write {
        ($pool:expr) => {{
            let mut tx = $pool.begin().await.unwrap();
            for row in &rows {
                let mut q = sqlx::query(&insert);
                for ((t, i), (_, k)) in row.iter().zip(cols) {
                    q = match k {
                        T => q.bind(t.clone()),
                        I => q.bind(*i),
                    };
                }
                q.execute(&mut *tx).await.unwrap();
            }
            tx.commit().await.unwrap();
        }};
    }
    match to {
        Db::Sqlite(p) => write!(p),
        Db::Postgres(p) => write!(p),
    }
    rows.len()
}

pub(super) const LOAN_COLUMNS: &[(&str, Kind)] = &[
    ("id", T),
    ("loan_number", T),
    ("borrower_first_name", T),
    ("borrower_last_name", T),
    ("borrower_email", T),
    ("search_key", T),
    ("status", T),
    ("status_date", I),
    ("loan_type", T),
    ("purpose", T),
    ("estimated_closing_date", I),
    ("updated", I),
    ("loan_amount", I),
    ("locked_compensation", I),
    ("estimated_compensation", I),
    ("property_state", T),
    ("company_id", T),
    ("loan_officer_id", T),
    ("loan_officer_name", T),
    ("loan_assistant_id", T),
    ("processor_id", T),
    ("processor_name", T),
    ("referring_agent_id", T),
    ("referring_agent_name", T),
];

/// Builds a v2 database at `url` with the rows of the v3 database `source` (as v2 held them).
pub(super) async fn v2_copy_of(source: &Db, url: &str) -> Db {
    let old = Db::open_at_version(url, 2).await.unwrap();
    let cols =
        |c: &[(&'static str, Kind)]| c.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ");
    let agents: &[(&str, Kind)] = &[
        ("id", T),
        ("email", T),
        ("email_key", T),
        ("first_name", T),
        ("last_name", T),
        ("company_id", T),
        ("active", I),
    ];
    let agent_select = "SELECT id, email, email_key, first_name, last_name, company_id, CAST(active AS BIGINT) FROM agents";
    copy(source, &old, agent_select, "agents", agents).await;
    let roles: &[(&str, Kind)] = &[("agent_id", T), ("role", T)];
    copy(
        source,
        &old,
        "SELECT agent_id, role FROM agent_roles",
        "agent_roles",
        roles,
    )
    .await;
    let managed: &[(&str, Kind)] = &[("manager_id", T), ("agent_id", T)];
    copy(
        source,
        &old,
        "SELECT manager_id, agent_id FROM agent_managed",
        "agent_managed",
        managed,
    )
    .await;
    copy(
        source,
        &old,
        &format!("SELECT {} FROM loans", cols(LOAN_COLUMNS)),
        "loans",
        LOAN_COLUMNS,
    )
    .await;
    let history: &[(&str, Kind)] = &[("loan_id", T), ("status", T), ("occurred_at", I)];
    let n = copy(
        source,
        &old,
        "SELECT k.id, h.status, h.occurred_at FROM los_status_history h JOIN loan_keys k ON k.key = h.loan_key",
        "los_status_history",
        history,
    )
    .await;
    assert!(n > 100, "the data set has history ({n} rows)");
    let milestones: &[(&str, Kind)] = &[("loan_id", T), ("milestone", T), ("occurred_at", I)];
    copy(
        source,
        &old,
        "SELECT k.id, m.milestone, m.occurred_at FROM dw_loan_milestones m JOIN loan_keys k ON k.key = m.loan_key",
        "dw_loan_milestones",
        milestones,
    )
    .await;
    let deals: &[(&str, Kind)] = &[("id", T), ("created_at", I), ("stage", T)];
    copy(
        source,
        &old,
        "SELECT id, created_at, stage FROM dw_deals",
        "dw_deals",
        deals,
    )
    .await;
    old
}

/// The rows of a period-set table (v4), keys replaced by ids.
pub(super) fn sets(table: &str) -> String {
    format!(
        "SELECT CAST(r.period_index AS TEXT) || '|' || k.id || '|' || CAST(r.status_bits AS TEXT) || '|' \
         || COALESCE(CAST(r.loan_amount AS TEXT), '-') || '|' || CAST(r.in_snapshot AS TEXT) \
         FROM {table} r JOIN loan_keys k ON k.key = r.loan_key ORDER BY 1"
    )
}

pub(super) fn counted(table: &str) -> String {
    let text = |c: &str| format!("COALESCE(CAST({c} AS TEXT), '-')");
    format!(
        "SELECT {} FROM {table} ORDER BY 1",
        [
            "period_index",
            "status_bits",
            "loans",
            "amounts",
            "amount_sum",
            "amount_min",
            "amount_max"
        ]
        .map(text)
        .join(" || '|' || ")
    )
}

/// The rows of a table of the snapshot's totals (schema v11) and of its table per company
/// (schema v12), key and partials as text.
pub(super) fn totals(t: &loanhost::data::totals::Totals) -> [String; 2] {
    let text = |c: &str| format!("COALESCE(CAST({c} AS TEXT), '-')");
    let (counted, _) = loanhost::data::totals::counted_columns();
    let columns: Vec<String> = t
        .keys
        .iter()
        .map(|(_, c)| text(c))
        .chain(counted.iter().map(|c| text(c)))
        .collect();
    let columns = columns.join(" || '|' || ");
    [
        format!("SELECT {columns} FROM {} ORDER BY 1", t.table),
        format!(
            "SELECT {} || '|' || {columns} FROM {} ORDER BY 1",
            text("company_id"),
            t.by_company
        ),
    ]
}

/// The stored data, keys replaced by the ids they stand for (each database numbers its own).
pub(super) async fn contents(db: &Db) -> Vec<Vec<String>> {
    let mut queries = vec![
        format!("SELECT {} FROM loans ORDER BY id", LOAN_COLUMNS.iter().map(|(n, _)| format!("COALESCE(CAST({n} AS TEXT), '-')")).collect::<Vec<_>>().join(" || '|' || ")),
        // Schema v6: each date's month index beside it.
        "SELECT id || '|' || COALESCE(CAST(status_month AS TEXT), '-') || '|' || COALESCE(CAST(estimated_closing_month AS TEXT), '-') \
         || '|' || COALESCE(CAST(updated_month AS TEXT), '-') FROM loans ORDER BY 1".to_string(),
        "SELECT k.id || '|' || h.status || '|' || CAST(h.occurred_at AS TEXT) || '|' || COALESCE(CAST(h.loan_amount AS TEXT), '-') || '|' || CAST(h.in_snapshot AS TEXT) \
         || '|' || CAST(h.month_index AS TEXT) || '|' || CAST(h.week_index AS TEXT) || '|' || CAST(h.status_bit AS TEXT) \
         FROM los_status_history h JOIN loan_keys k ON k.key = h.loan_key ORDER BY 1".to_string(),
        "SELECT k.id || '|' || m.milestone || '|' || CAST(m.occurred_at AS TEXT) FROM dw_loan_milestones m JOIN loan_keys k ON k.key = m.loan_key ORDER BY 1".to_string(),
        sets("los_history_months"),
        sets("los_history_weeks"),
        // Schema v7: the sets counted per (period, set of bits), as 0008 counts them and as
        // the import does.
        counted("los_set_counts_months"),
        counted("los_set_counts_weeks"),
        // Schema v13: the snapshot's loans per (period, status text), as 0014 counts them
        // and as the import does.
        counted("los_status_counts_months").replace("status_bits", "status"),
        counted("los_status_counts_weeks").replace("status_bits", "status"),
        // Schema v8: the warehouse's distinct loans per (period, milestone).
        "SELECT CAST(period_index AS TEXT) || '|' || milestone || '|' || CAST(loans AS TEXT) FROM dw_milestone_counts_months ORDER BY 1".to_string(),
        "SELECT CAST(period_index AS TEXT) || '|' || milestone || '|' || CAST(loans AS TEXT) FROM dw_milestone_counts_weeks ORDER BY 1".to_string(),
        // Schema v10: the deals per (period, stage).
        "SELECT CAST(period_index AS TEXT) || '|' || stage || '|' || CAST(deals AS TEXT) FROM dw_deal_counts_months ORDER BY 1".to_string(),
        "SELECT CAST(period_index AS TEXT) || '|' || stage || '|' || CAST(deals AS TEXT) FROM dw_deal_counts_weeks ORDER BY 1".to_string(),
        "SELECT l.id FROM loans l JOIN loan_keys k ON k.key = l.key AND k.id = l.id ORDER BY 1".to_string(),
        "SELECT id FROM loan_keys ORDER BY 1".to_string(),
        // Schema v20: the people, as 0020 builds them and as the import writes them.
        "SELECT id || '|' || CAST(parts AS TEXT) || '|' || COALESCE(name, '-') || '|' || name_lower \
         FROM people_search ORDER BY 1".to_string(),
        "SELECT company_id || '|' || id || '|' || CAST(parts AS TEXT) || '|' || COALESCE(name, '-') \
         || '|' || name_lower FROM people_company_search ORDER BY 1".to_string(),
    ];
    // Schema v11 and v12: the snapshot's totals per key value, and per company, as 0012 and
    // 0013 count them and the import.
    queries.extend(loanhost::data::totals::TOTALS.iter().flat_map(totals));
    let mut out = vec![person_loans(db).await];
    for sql in queries {
        let rows: Vec<String> = match db {
            Db::Sqlite(p) => sqlx::query_scalar(&sql).fetch_all(p).await.unwrap(),
            Db::Postgres(p) => sqlx::query_scalar(&sql).fetch_all(p).await.unwrap(),
        };
        out.push(rows);
    }
    out
}

/// Schema v15: each person's loan rows, keys replaced by ids and each row's sets (JSON pairs,
/// in whatever order the engine aggregated them) sorted.
pub(super) async fn person_loans(db: &Db) -> Vec<String> {
    let sql = "SELECT p.person_id || '|' || k.id || '|' || CAST(p.roles AS TEXT) || '|' \
               || COALESCE(CAST(p.loan_amount AS TEXT), '-'), p.months, p.weeks \
               FROM person_loans p JOIN loan_keys k ON k.key = p.loan_key";
    let rows: Vec<(String, String, String)> = match db {
        Db::Sqlite(p) => sqlx::query_as(sql).fetch_all(p).await.unwrap(),
        Db::Postgres(p) => sqlx::query_as(sql).fetch_all(p).await.unwrap(),
    };
    let sorted = |sets: &str| {
        let mut pairs: Vec<(i64, i64)> = serde_json::from_str(sets).unwrap();
        pairs.sort_unstable();
        format!("{pairs:?}")
    };
    let mut out: Vec<String> = rows
        .into_iter()
        .map(|(row, months, weeks)| format!("{row}|{}|{}", sorted(&months), sorted(&weeks)))
        .collect();
    out.sort();
    assert!(!out.is_empty(), "the seed's people have loans with history");
    out
}

/// The reports' query shapes: organisation-wide history alone, an Agent's joined history, a
/// pre-aggregated mapping, a covered group-by, a warehouse distinct count.
pub(super) fn queries() -> Vec<(Query, Scope)> {
    let admin = Scope {
        all: true,
        ..Default::default()
    };
    let base = Query {
        dataset: Dataset::Loans,
        filter: None,
        predicates: vec![],
        group_by: vec![],
        distinct_on: None,
        aggregates: vec![Aggregate::Count],
        order_by: vec![],
        limit: None,
    };
    let milestones = Query {
        dataset: Dataset::LosStatusHistory,
        predicates: vec![(
            "occurredAt".into(),
            Condition::Ge(Value::Timestamp("2025-01-01T00:00:00Z".into())),
        )],
        group_by: vec![
            Key::Period("occurredAt".into(), PeriodUnit::Month),
            Key::Mapped(
                "milestone".into(),
                vec![
                    ("Loan Open".into(), "1. Opened".into()),
                    ("Loan Funded".into(), "5. Closed".into()),
                ],
                Some("Other".into()),
            ),
        ],
        distinct_on: Some("loanId".into()),
        aggregates: vec![Aggregate::Count, Aggregate::Sum("loan.loanAmount".into())],
        ..base.clone()
    };
    let pipeline = Query {
        group_by: vec![Key::Mapped(
            "status".into(),
            vec![("Loan Open".into(), "Open".into())],
            Some("Other".into()),
        )],
        aggregates: vec![
            Aggregate::Count,
            Aggregate::Sum("loanAmount".into()),
            Aggregate::Max("loanAmount".into()),
        ],
        ..base.clone()
    };
    let by_status = Query {
        group_by: vec![Key::Field("status".into())],
        aggregates: vec![
            Aggregate::Count,
            Aggregate::Sum("lockedCompensation".into()),
        ],
        ..base.clone()
    };
    // Schema v6: months and quarters of the snapshot's dates from their stored indexes.
    let by_month = Query {
        group_by: vec![Key::Period("statusDate".into(), PeriodUnit::Month)],
        aggregates: vec![Aggregate::Count, Aggregate::Max("loanAmount".into())],
        ..base.clone()
    };
    let by_quarter = Query {
        predicates: vec![("updated".into(), Condition::IsNotNull)],
        group_by: vec![Key::Period("updated".into(), PeriodUnit::Quarter)],
        ..by_month.clone()
    };
    let warehouse = Query {
        dataset: Dataset::DwLoanMilestones,
        group_by: vec![Key::Field("milestone".into())],
        aggregates: vec![Aggregate::CountDistinct("loanId".into())],
        ..base.clone()
    };
    // The pipeline's deals per (week, stage) over all history: schema v10's counts.
    let deals = Query {
        dataset: Dataset::DwDeals,
        predicates: vec![(
            "createdAt".into(),
            Condition::Lt(Value::Timestamp("2026-03-16T00:00:00Z".into())),
        )],
        group_by: vec![
            Key::Period("createdAt".into(), PeriodUnit::Week),
            Key::Field("stage".into()),
        ],
        aggregates: vec![Aggregate::CountDistinct("id".into())],
        ..base.clone()
    };
    // Bounded windows, organisation-wide: whole periods read v4's period sets, part of one does not.
    let months = Query {
        predicates: vec![
            (
                "occurredAt".into(),
                Condition::Ge(Value::Timestamp("2025-10-01T00:00:00Z".into())),
            ),
            (
                "occurredAt".into(),
                Condition::Lt(Value::Timestamp("2026-04-01T00:00:00Z".into())),
            ),
        ],
        ..milestones.clone()
    };
    let mut weeks = months.clone();
    weeks.group_by[0] = Key::Period("occurredAt".into(), PeriodUnit::Week);
    weeks.predicates[0].1 = Condition::Ge(Value::Timestamp("2025-12-01T00:00:00Z".into()));
    weeks.predicates[1].1 = Condition::Lt(Value::Timestamp("2026-03-16T00:00:00Z".into()));
    let mut part_weeks = weeks.clone();
    part_weeks.predicates[0].1 = Condition::Gt(Value::Timestamp("2025-12-03T05:00:00Z".into()));
    vec![
        (months, admin.clone()),
        (weeks, admin.clone()),
        (part_weeks, admin.clone()),
        (milestones.clone(), admin.clone()),
        (
            milestones,
            Scope {
                company: Some("c".into()),
                all: false,
                ..Default::default()
            },
        ),
        (pipeline, admin.clone()),
        (by_status, admin.clone()),
        (by_month, admin.clone()),
        (by_quarter, admin.clone()),
        (warehouse, admin.clone()),
        (deals, admin),
    ]
}
