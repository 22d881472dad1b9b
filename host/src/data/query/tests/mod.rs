//! Unit tests of the query compiler and its executors, by stage; the helpers they share.

use super::*;
use crate::data::catalog::Dataset;
use crate::data::query::columns::P;
use crate::data::report_store::Plans;
use crate::data::report_store::{PgReads, SqliteReads};
use crate::data::Db;
use std::sync::Arc;
use std::time::Duration;

mod engine_order;
mod engines;
mod filter;
mod fold;
mod fuzz;
mod host_order;
mod listing;
mod months;
mod period_sets;
mod planners;
mod plans;
mod raw_status;
mod scope;
mod search;
mod totals;
mod totals_row;
mod warehouse;

pub(crate) fn q(dataset: Dataset) -> Query {
    Query {
        dataset,
        filter: None,
        predicates: vec![],
        group_by: vec![],
        distinct_on: None,
        aggregates: vec![Aggregate::Count],
        order_by: vec![],
        limit: None,
    }
}

pub(super) fn admin() -> Scope {
    Scope {
        all: true,
        ..Default::default()
    }
}

/// A Processor's scope: one company's loans.
pub(super) fn company() -> Scope {
    Scope {
        company: Some("c".into()),
        ..Default::default()
    }
}

/// A ConciergeKey's scope: one managed officer's loans (a scope the totals do not count).
pub(super) fn concierge() -> Scope {
    Scope {
        managed_officers: vec!["o".into()],
        ..Default::default()
    }
}

pub(super) fn agent() -> Scope {
    Scope {
        originated_by: Some("me".into()),
        ..Default::default()
    }
}

/// The milestone report's shape: window, period and mapped status, distinct loans, the
/// loan's amount.
pub(super) fn milestones() -> Query {
    Query {
        predicates: vec![(
            "occurredAt".into(),
            Condition::Ge(Value::Timestamp("2026-01-01T00:00:00Z".into())),
        )],
        group_by: vec![
            Key::Period("occurredAt".into(), PeriodUnit::Month),
            Key::Mapped(
                "milestone".into(),
                vec![("Loan Open".into(), "1. Opened".into())],
                Some("Other".into()),
            ),
        ],
        distinct_on: Some("loanId".into()),
        aggregates: vec![Aggregate::Count, Aggregate::Sum("loan.loanAmount".into())],
        ..q(Dataset::LosStatusHistory)
    }
}

/// A bounded window of [`milestones`] (`to` exclusive).
pub(super) fn milestones_between(unit: PeriodUnit, from: &str, to: &str) -> Query {
    let mut q = milestones();
    q.group_by[0] = Key::Period("occurredAt".into(), unit);
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

/// A migrated SQLite database in a scratch file (report statements read files).
pub(super) async fn scratch_sqlite() -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&format!("sqlite://{}", dir.path().join("t.db").display()))
        .await
        .unwrap();
    (dir, db)
}

pub(super) use crate::data::test_postgres_url;

/// Report reads over one session of the test PostgreSQL.
pub(super) fn one_postgres_session() -> Arc<PgReads> {
    Arc::new(PgReads::new(test_postgres_url().parse().unwrap(), 1))
}

/// A report store over one connection to a migrated SQLite scratch file (which lives as long
/// as the returned folder and database).
pub(super) async fn one_sqlite_connection() -> (tempfile::TempDir, Db, ReportStore) {
    let (dir, db) = scratch_sqlite().await;
    let reads = SqliteReads::with_connections(&dir.path().join("t.db"), 1);
    (dir, db, ReportStore::Sqlite(Arc::new(reads)))
}

/// The integer parameters of a compiled statement, in order.
pub(super) fn int_params(c: &Compiled) -> Vec<i64> {
    c.params
        .iter()
        .filter_map(|p| match p {
            P::I(i) => Some(*i),
            P::T(_) => None,
        })
        .collect()
}

pub(super) fn json_filter(key: &str, value: &str) -> String {
    serde_json::json!({ key: value }).to_string()
}
