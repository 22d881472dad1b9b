//! A compiled statement, and its wrapping: deterministic order (nulls last on both engines),
//! the total number of groups, the limit.

use super::*;

/// Wraps a grouped statement: deterministic order (nulls last on both engines; text by its
/// bytes on both, as SQLite's `BINARY` and the host's fold order it), the total number of
/// groups, the limit. A person's groups (`personal`: a few hundred loans at most) are
/// ordered, counted and limited by the host ([`HostOrder`]), with this wrapped statement as
/// the one that answers when they turn out too many.
pub(super) fn finish(
    q: &Query,
    grouped: String,
    key_params: Vec<P>,
    where_params: Vec<P>,
    outs: Vec<Out>,
    postgres: bool,
    personal: bool,
) -> Result<Compiled, QueryError> {
    let name = |i: usize| {
        if i < q.group_by.len() {
            format!("k{i}")
        } else {
            format!("a{}", i - q.group_by.len())
        }
    };
    // PostgreSQL compares text by the database's collation: a locale's rules cost more than
    // the grouping of a scoped caller's few hundred loans (strcoll on every tie of the
    // counts), and order differently from SQLite and the fold. `NULLS LAST` (both engines;
    // SQLite since 3.30) rather than a `(x IS NULL)` column before each key: the same order,
    // a third of the sort's cost.
    let column = |i: usize| {
        let n = name(i);
        let collate = if postgres && matches!(outs.get(i), Some(Out::Text)) {
            " COLLATE \"C\""
        } else {
            ""
        };
        format!("{n}{collate}")
    };
    let mut order = Vec::new();
    if !q.order_by.is_empty() {
        check_order(q)?;
        for (col, desc) in &q.order_by {
            order.push(format!(
                "{}{} NULLS LAST",
                column(*col as usize),
                if *desc { " DESC" } else { "" }
            ));
        }
    }
    order.extend((0..q.group_by.len()).map(|i| format!("{} NULLS LAST", column(i))));
    let limit = limit_of(q);
    let order_sql = if order.is_empty() {
        String::new()
    } else {
        format!(" ORDER BY {}", order.join(", "))
    };
    // The grouping is a materialised CTE. On PostgreSQL, seen through the order, the planner
    // sorted every input row to group them in the answer's order whenever it guessed as many
    // groups as rows (a computed period, which has no statistics), where hashing them and
    // sorting the groups alone is less work (the deals' 25k rows into 1,636 week groups: the
    // statement 9.7 -> 7.9 ms; end to end the same, as the sorted plan streamed its groups
    // while the host decoded them). Where sorted input is cheaper for the grouping itself (an
    // index in key order), the CTE's own plan still takes it. The number of groups is a
    // count over the CTE, not `COUNT(*) OVER ()`: the window buffered every group again
    // before the order's top rows were picked (an Admin's 6,650 officers, schema v11: 11-13
    // ms against 4.7-6 ms on PostgreSQL, 10 against 5 ms on SQLite). The answer needs every
    // group for its `total_groups`, so the CTE costs no early stop.
    let sql = format!(
        "WITH g AS MATERIALIZED ({grouped}) \
         SELECT g.*, (SELECT COUNT(*) FROM g) AS total_groups FROM g{order_sql} LIMIT {limit}"
    );
    let mut params = key_params;
    params.extend(where_params);
    let wrapped = Compiled {
        sql,
        params,
        outs,
        columns: result_columns(q),
        limit,
        fold: None,
        order: None,
        full: None,
        plans: Plans::PerCall,
    };
    if !personal {
        return Ok(wrapped);
    }
    // One group more than the host orders tells it to run the wrapped statement instead.
    let order = HostOrder::new(q, wrapped.outs.clone());
    Ok(Compiled {
        sql: format!("{grouped} LIMIT {}", order.cap + 1),
        params: wrapped.params.clone(),
        outs: HostOrder::raw_outs(&wrapped.outs),
        columns: wrapped.columns.clone(),
        limit,
        fold: None,
        order: Some(order),
        full: Some(Box::new(wrapped)),
        plans: Plans::PerCall,
    })
}

impl Compiler {
    /// [`finish`] for this compiler's engine and scope (a person's groups ordered by the host).
    pub(super) fn finish(
        &self,
        q: &Query,
        grouped: String,
        key_params: Vec<P>,
        where_params: Vec<P>,
        outs: Vec<Out>,
    ) -> Result<Compiled, QueryError> {
        finish(
            q,
            grouped,
            key_params,
            where_params,
            outs,
            self.postgres,
            self.personal,
        )
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

/// Two rows in the order [`finish`] writes in SQL, for the rows the host orders itself (the
/// period sets' fold, a person's groups): each of `columns` in turn, a cell `None` (NULL)
/// after every value in either direction (`NULLS LAST`), values by their own order.
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
