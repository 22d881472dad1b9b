//! A planner's grouped statement made the query's answer (the host orders, counts and limits
//! its groups: `host_order`), the order it is given in, and the answer from cut groups'
//! totals to the query without keys.

use super::columns::{Out, P};
use super::compiler::Compiler;
use super::host_order::HostOrder;
use super::intake::value_bytes;
use super::ir::{Aggregate, Query, QueryError, Rows, Value};
use super::limits::ROW_CAP;
use super::plan::Compiled;
use crate::data::report_store::Plans;

/// Makes a grouped statement the query's answer: the statement groups and nothing more, and
/// the host orders its groups (the requested columns, then the keys; NULL last; text by its
/// bytes), counts them, keeps the limit's best and, when cut, adds up their totals
/// ([`HostOrder`]). The same order written in SQL (a materialised CTE, its count,
/// `ORDER BY … LIMIT` and a totals branch) is the tests' `engine_order`, which the host's
/// order is checked against on both engines.
pub(super) fn finish(
    q: &Query,
    grouped: String,
    key_params: Vec<P>,
    where_params: Vec<P>,
    outs: Vec<Out>,
    how: Wrapping,
) -> Result<Compiled, QueryError> {
    check_order(q)?;
    let mut params = key_params;
    params.extend(where_params);
    Ok(Compiled {
        sql: grouped,
        params,
        outs: HostOrder::raw_outs(&outs),
        columns: result_columns(q),
        limit: limit_of(q),
        fold: None,
        order: Some(HostOrder::new(q, outs, how)),
        full: None,
        plans: Plans::PerCall,
    })
}

/// How [`finish`] answers a statement.
#[derive(Debug, Clone, Copy)]
pub(super) struct Wrapping {
    /// For PostgreSQL (else SQLite).
    pub(super) postgres: bool,
    /// Cut groups give their totals ([`HostOrder`]): not where the statement reads the
    /// import's totals, which answer the query without its keys as cheaply.
    pub(super) totals: bool,
}

/// The `total_groups` of a totals row after a statement's own ordered groups (the tests'
/// `engine_order`): no count of groups is negative.
pub(super) const TOTALS_ROW: i64 = -1;

/// Whether `q` without its keys is answered by adding up its groups: every row is in exactly
/// one group (a key is a function of its row: a field, a period, a label of a field), and
/// every aggregate adds up across groups (counts and sums by their sum, a minimum by the least
/// of the groups', a maximum by the greatest); a distinct count and a distinct-on query do
/// not.
pub(super) fn adds_up(q: &Query) -> bool {
    !q.group_by.is_empty()
        && q.distinct_on.is_none()
        && q.aggregates
            .iter()
            .all(|a| !matches!(a, Aggregate::CountDistinct(_)))
}

/// The answer to `q` from the totals row of `grouped`'s rows (`Rows::totals`), when `q` is
/// `grouped` without its keys, order and limit: the same dataset, filter, predicates and
/// aggregates, read in the same scope (the caller checks that), so the same rows added up.
/// It is what running `q` returns: its one row, `total_groups` 1, nothing cut.
pub fn answer_from_totals(grouped: &Query, totals: &[Value], q: &Query) -> Option<Rows> {
    let twin = q.group_by.is_empty()
        && q.distinct_on.is_none()
        && q.order_by.is_empty()
        && q.limit.is_none_or(|l| l > 0)
        && adds_up(grouped)
        && q.dataset == grouped.dataset
        && q.filter == grouped.filter
        && q.predicates == grouped.predicates
        && q.aggregates == grouped.aggregates
        && totals.len() == grouped.group_by.len() + q.aggregates.len();
    if !twin {
        return None;
    }
    let row = totals[grouped.group_by.len()..].to_vec();
    Some(Rows {
        columns: result_columns(q),
        bytes: row.iter().map(value_bytes).sum(),
        rows: vec![row],
        truncated: false,
        total_groups: 1,
        totals: None,
    })
}

impl Compiler {
    /// [`finish`] for this compiler's engine, cut groups with their totals.
    pub(super) fn finish(
        &self,
        q: &Query,
        grouped: String,
        key_params: Vec<P>,
        where_params: Vec<P>,
        outs: Vec<Out>,
    ) -> Result<Compiled, QueryError> {
        let how = self.wrapping(true);
        finish(q, grouped, key_params, where_params, outs, how)
    }

    /// How [`finish`] wraps this compiler's statements; `totals`: cut groups with their totals.
    pub(super) fn wrapping(&self, totals: bool) -> Wrapping {
        Wrapping {
            postgres: self.postgres,
            totals,
        }
    }
}

/// The columns [`finish`] orders by, each with whether it descends: the requested ones, then
/// the `keys` leading columns (which make the order total).
pub(super) fn order_columns(order_by: &[(u32, bool)], keys: usize) -> Vec<(usize, bool)> {
    order_by
        .iter()
        .map(|(col, desc)| (*col as usize, *desc))
        .chain((0..keys).map(|i| (i, false)))
        .collect()
}

/// Two rows in the answer's order, for the rows the host orders itself (the period sets' fold,
/// every statement's groups): each of `columns` in turn, a cell `None` (NULL) after every
/// value in either direction (`NULLS LAST`, as the engines' order was written), values by
/// their own order.
pub(super) fn in_statement_order<T: Ord>(
    columns: &[(usize, bool)],
    a: impl Fn(usize) -> Option<T>,
    b: impl Fn(usize) -> Option<T>,
) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    columns
        .iter()
        .map(|&(i, desc)| match (a(i), b(i)) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Greater,
            (Some(_), None) => Ordering::Less,
            (Some(x), Some(y)) if desc => y.cmp(&x),
            (Some(x), Some(y)) => x.cmp(&y),
        })
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

/// Refuses an order-by column past the result's keys and aggregates.
pub(super) fn check_order(q: &Query) -> Result<(), QueryError> {
    let width = q.group_by.len() + q.aggregates.len();
    match q.order_by.iter().find(|(col, _)| *col as usize >= width) {
        Some((col, _)) => Err(QueryError::Invalid(format!(
            "order-by column {col} does not exist ({width} columns)"
        ))),
        None => Ok(()),
    }
}

/// The most rows the query's result holds: its limit, at most [`ROW_CAP`].
pub(super) fn limit_of(q: &Query) -> u32 {
    q.limit.unwrap_or(ROW_CAP).min(ROW_CAP)
}

/// The result's column names: `key0…` for the group keys, then `agg0…`.
pub(super) fn result_columns(q: &Query) -> Vec<String> {
    (0..q.group_by.len())
        .map(|i| format!("key{i}"))
        .chain((0..q.aggregates.len()).map(|i| format!("agg{i}")))
        .collect()
}
