//! A planner's grouped statement made the query's answer (the host orders, counts and limits
//! its groups: `host_order`), the order it is given in, and the answer from cut groups'
//! totals to the query without keys.

use super::columns::{Out, P};
use super::compiled::Compiled;
use super::compiler::Compiler;
use super::host_order::HostOrder;
use super::intake::value_bytes;
use super::ir::{Query, QueryError, Rows, Value};
use super::order::{adds_up, check_order, limit_of, result_columns, Wrapping};
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
