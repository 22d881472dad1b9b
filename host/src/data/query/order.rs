//! The order, count and limit of a statement's groups as a query states them: the columns
//! an order reads, the limit, the result's column names, and how a grouped statement is
//! wrapped for the host's order and totals.

use super::ir::Aggregate;
use super::ir::Query;
use super::ir::QueryError;
use super::limits::ROW_CAP;

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
