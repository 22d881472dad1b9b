//! The structured-query compiler: a plugin's query (dataset, filter, predicates, group-by
//! keys, aggregates, order, limit) becomes one parameterized SQL statement for SQLite or
//! PostgreSQL, with the caller's scope always AND-ed in for caller-scoped datasets. Field
//! names map through the dataset's whitelist to fixed column expressions; every value from a
//! plugin or a caller is a bound parameter, never SQL text. Aggregation runs in the database.
//!
//! The stages, one file each, in the order a query meets them:
//! - `ir`: what a plugin may ask (the WIT's `data` types map onto it), what comes back;
//! - `plan`: `compile` checks the query and picks a planner: `plan_totals`,
//!   `plan_period_sets`, `plan_preaggregated`, `plan_warehouse`, or the row-by-row statement
//!   of `plan` itself;
//! - `compiler` (fields, predicates, keys; the name-reading right), `filter` (the spec's
//!   filter object), `periods` (window arithmetic), `columns` (bound parameters, decoders);
//! - `scoped`: the one `WHERE` builder every planner calls, where the caller's scope enters;
//! - `statement`: a planner's grouped statement made the query's answer;
//! - `intake`: the call's budgets for one statement and the counting of its rows;
//! - `fold`: the host's half of the period-set plan (sets into labelled groups);
//! - `host_order`: the host's order, count, limit and totals of a statement's groups;
//! - `exec_sqlite`, `exec_postgres`: one executor per engine, each stopping its statement
//!   inside the engine at its deadline.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value as Json;
use sqlx::Row;

use super::catalog::{Dataset, Field, FieldType};
use super::report_store::{
    session_timeout_ms, PgReads, Plans, ReadError, ReportStore, SqliteReads,
};
use super::scope::Scope;
use super::store::number_placeholders;
use super::values::{
    closest, format_decimal, format_instant, parse_decimal, parse_instant, parse_uuid,
    LOAN_STATUSES, LOAN_TYPES, PURPOSES,
};

/// Most rows a query returns, whatever its limit.
pub const ROW_CAP: u32 = 10_000;
/// Longest a statement may run.
pub const STATEMENT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest `filter.searchText`, in characters.
pub const MAX_SEARCH_CHARS: usize = 200;
/// Most words in `filter.searchText` (each is one `LIKE`).
pub const MAX_SEARCH_WORDS: usize = 8;
/// Most values in a filter array or an any-of predicate.
pub const MAX_LIST_VALUES: usize = 200;
/// Longest text value in a filter or predicate, in bytes.
pub const MAX_VALUE_BYTES: usize = 256;
/// Longest filter (JSON text), in bytes.
pub const MAX_FILTER_BYTES: usize = 16 * 1024;
/// Most entries of a value→label map.
pub const MAX_MAP_ENTRIES: usize = 256;
/// Longest label of a value→label map, in bytes: labels are copied into every result row.
pub const MAX_LABEL_BYTES: usize = 64;

mod columns;
mod compiler;
mod exec_postgres;
mod exec_sqlite;
mod filter;
mod fold;
mod host_order;
mod intake;
mod ir;
mod periods;
mod plan;
mod plan_period_sets;
mod plan_preaggregated;
mod plan_totals;
mod plan_warehouse;
mod scoped;
mod statement;
#[cfg(test)]
mod tests;

use columns::*;
use compiler::*;
use exec_postgres::*;
use exec_sqlite::*;
use filter::*;
use fold::*;
use host_order::*;
use intake::*;
pub use intake::{Allowance, DEFAULT_MAX_BYTES};
pub use ir::*;
use periods::*;
use plan::*;
use plan_period_sets::*;
use plan_preaggregated::*;
use plan_totals::*;
use plan_warehouse::*;
use scoped::*;
pub use statement::answer_from_totals;
use statement::*;

/// Runs a query for a caller (`scope` is required for caller-scoped datasets), within
/// `allowance`. The statement runs on its own task: if the caller goes away, it still ends
/// at its deadline (SQLite: a progress handler; PostgreSQL: `statement_timeout`), and its
/// connection goes back to the pool at once.
pub async fn run(
    store: &ReportStore,
    q: &Query,
    scope: Option<&Scope>,
    can_read_names: bool,
    allowance: Allowance,
) -> Result<Rows, QueryError> {
    let postgres = matches!(store, ReportStore::Postgres(_));
    let compiled = compile(q, scope, can_read_names, postgres)?;
    let columns = compiled.columns.clone();
    let limit = compiled.limit;
    let fetched = spawn_execute(store, compiled, allowance).await?;
    let total_groups = fetched.total;
    Ok(Rows {
        truncated: total_groups > fetched.rows.len() as u64,
        columns,
        rows: fetched.rows,
        total_groups: if limit == 0 { 0 } else { total_groups },
        bytes: fetched.bytes,
        totals: fetched.totals,
    })
}

/// How PostgreSQL plans `q` for a caller in `scope` ([`Plans`]): with one generic plan per
/// session when the scope is a person's (an Agent's, a referrer's, a ConciergeKey's officers':
/// a few hundred loans through the scope's indexes), the statement reads the loans alone,
/// and nothing else in it can take an index: no filter, and no predicate but ranges and null
/// checks of numbers and instants, which a person's statement keeps off their indexes
/// (`Compiler::filter_column`, `Compiler::personal`). A generic plan prices an Agent at the
/// assistant column's average (3,000 loans), so anything else with an index looks worth
/// intersecting with it: a filter's purposes (215k loans, 38 ms where the statement planned
/// for its values took 0.3 ms), a closing date that is not null when written as is (400k, 35
/// ms). Those statements are planned for their values, as every other caller's are. (A
/// person's history sets have a rule of their own, with the statement written for it:
/// `compile_period_sets`.)
fn plans_for(q: &Query, scope: Option<&Scope>) -> Plans {
    let off_indexes = |(name, condition): &(String, Condition)| {
        matches!(
            condition,
            Condition::Lt(_)
                | Condition::Le(_)
                | Condition::Gt(_)
                | Condition::Ge(_)
                | Condition::IsNull
                | Condition::IsNotNull
        ) && q
            .dataset
            .field(name)
            .is_some_and(|f| f.ty != FieldType::Text)
    };
    if scope.is_some_and(Scope::is_personal)
        && q.dataset == Dataset::Loans
        && q.filter.is_none()
        && q.predicates.iter().all(off_indexes)
    {
        Plans::Generic
    } else {
        Plans::PerCall
    }
}

/// Runs a statement on a thread or task of its own, so that it ends at its deadline (and
/// gives its connection back) even when the caller's future is dropped first; then its `full`
/// one instead, when its fold asks for it.
async fn spawn_execute(
    store: &ReportStore,
    mut compiled: Compiled,
    allowance: Allowance,
) -> Result<Fetched, QueryError> {
    let full = compiled.full.take();
    let fetched = spawn_execute_one(store, compiled, allowance).await?;
    match full {
        Some(full) if fetched.needs_full => spawn_execute_one(store, *full, allowance).await,
        _ => Ok(fetched),
    }
}

async fn spawn_execute_one(
    store: &ReportStore,
    compiled: Compiled,
    allowance: Allowance,
) -> Result<Fetched, QueryError> {
    match store {
        ReportStore::Sqlite(reads) => execute_sqlite(reads, compiled, allowance).await,
        ReportStore::Postgres(reads) => {
            let reads = reads.clone();
            tokio::spawn(async move { execute_postgres(&reads, &compiled, allowance).await })
                .await
                .map_err(|e| unavailable(&e))?
        }
    }
}
