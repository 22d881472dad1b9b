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
//! - `listing`: a page of rows for a plugin with a listing grant (keyset paging, the same
//!   `WHERE` builder);
//! - `exec_sqlite`, `exec_postgres`: one executor per engine, each stopping its statement
//!   inside the engine at its deadline.

use compiled::Compiled;
use exec_postgres::execute_postgres;
use exec_sqlite::execute_sqlite;
use intake::{unavailable, Fetched};
use plan::compile;

use super::report_store::ReportStore;
use super::scope::Scope;

mod columns;
mod compiled;
mod compiler;
mod exec_postgres;
mod exec_sqlite;
mod filter;
mod fold;
mod host_order;
mod intake;
mod ir;
mod limits;
mod listing;
mod order;
mod period_set_sql;
mod periods;
mod plan;
mod plan_period_sets;
mod plan_preaggregated;
mod plan_totals;
mod plan_warehouse;
mod scoped;
mod sink;
mod statement;
#[cfg(test)]
pub(crate) mod tests;

pub use intake::{Allowance, DEFAULT_MAX_BYTES};
pub use ir::{Aggregate, Condition, Key, PeriodUnit, Query, QueryError, Rows, Value};
pub use limits::{
    MAX_FILTER_BYTES, MAX_LABEL_BYTES, MAX_LIST_VALUES, MAX_MAP_ENTRIES, MAX_SEARCH_CHARS,
    MAX_SEARCH_WORDS, MAX_VALUE_BYTES, ROW_CAP, STATEMENT_TIMEOUT,
};
pub use listing::{
    list, ListError, ListOrder, ListQuery, Listed, Readers, MAX_LIST_FIELDS, MAX_PAGE_SIZE,
};
pub use statement::answer_from_totals;

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
