//! A compiled statement, and its wrapping: deterministic order (nulls last on both engines),
//! the total number of groups, the limit, and the totals of groups cut by the limit.

use super::*;

/// Wraps a grouped statement: deterministic order (nulls last on both engines; text by its
/// bytes on both, as SQLite's `BINARY` and the host's fold order it), the total number of
/// groups, the limit; after groups cut by the limit, their totals ([`totals_row`], when
/// `how.totals`). A person's groups (`how.personal`: a few hundred loans at most) are ordered,
/// counted and limited by the host ([`HostOrder`]), with this wrapped statement as the one
/// that answers when they turn out too many.
pub(super) fn finish(
    q: &Query,
    grouped: String,
    key_params: Vec<P>,
    where_params: Vec<P>,
    outs: Vec<Out>,
    how: Wrapping,
) -> Result<Compiled, QueryError> {
    let Wrapping {
        postgres,
        personal,
        totals,
    } = how;
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
    let groups = format!(
        "SELECT g.*, (SELECT COUNT(*) FROM g) AS total_groups FROM g{order_sql} LIMIT {limit}"
    );
    let totals = if totals {
        totals_row(q, limit, postgres)
    } else {
        None
    };
    let sql = match totals {
        None => format!("WITH g AS MATERIALIZED ({grouped}) {groups}"),
        Some(totals) => format!(
            "WITH g AS MATERIALIZED ({grouped}) SELECT * FROM ({groups}) r UNION ALL {totals}"
        ),
    };
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

/// How [`finish`] wraps a statement.
#[derive(Debug, Clone, Copy)]
pub(super) struct Wrapping {
    /// For PostgreSQL (else SQLite).
    pub(super) postgres: bool,
    /// The caller's scope is a person's: the host orders the groups ([`HostOrder`]).
    pub(super) personal: bool,
    /// Cut groups append their totals ([`totals_row`]): not where the statement reads the
    /// import's totals, which answer the query without its keys as cheaply.
    pub(super) totals: bool,
}

/// The `total_groups` of the row [`totals_row`] appends: no count of groups is negative.
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

/// The branch that appends, after the groups, one row answering `q` without its keys (NULL
/// keys, each aggregate over every group, `total_groups` [`TOTALS_ROW`]), when the groups
/// pass `limit` and `q` [`adds_up`]. A guest told its groups were cut asks the ungrouped
/// query next for its totals (`report_loans`'s `totalCount`), which read every row a second
/// time (an Admin's 33,300 officers at 5M loans, filtered: 1.1 s twice); the `data`
/// capability answers that query from this row (`answer_from_totals`). A sum that would not
/// fit in 64 bits gives no row (the ungrouped query then runs and fails as it would have),
/// rather than failing this statement: on PostgreSQL only the cast of the NUMERIC sum can
/// overflow (checked before it, in `HAVING`); SQLite's `SUM` fails as it adds, so every
/// partial sum is bounded first, by the float total of the groups' magnitudes (its rounding,
/// at most n·2⁻⁵³ of it, is far inside the bound's 2·10¹⁷ margin).
fn totals_row(q: &Query, limit: u32, postgres: bool) -> Option<String> {
    if !adds_up(q) {
        return None;
    }
    let bigint = if postgres { "BIGINT" } else { "INTEGER" };
    let mut columns = vec!["NULL".to_string(); q.group_by.len()];
    let mut gate = format!("COUNT(*) > {limit}");
    let mut fits = String::new();
    for (i, a) in q.aggregates.iter().enumerate() {
        columns.push(match a {
            Aggregate::Min(_) => format!("MIN(a{i})"),
            Aggregate::Max(_) => format!("MAX(a{i})"),
            _ => format!("CAST(SUM(a{i}) AS {bigint})"),
        });
        if !matches!(a, Aggregate::Sum(_)) {
            continue;
        }
        if postgres {
            fits.push_str(&format!(
                " AND (SUM(a{i}) IS NULL OR SUM(a{i}) BETWEEN -9223372036854775808 AND 9223372036854775807)"
            ));
        } else {
            gate.push_str(&format!(" AND TOTAL(ABS(CAST(a{i} AS REAL))) < 9.0e18"));
        }
    }
    columns.push(TOTALS_ROW.to_string());
    // The gate is a constant of the statement (one scan of the groups, before the loop): no
    // groups are added up unless they pass the limit.
    Some(format!(
        "SELECT {} FROM g WHERE (SELECT {gate} FROM g) HAVING COUNT(*) > 0{fits}",
        columns.join(", ")
    ))
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
    /// [`finish`] for this compiler's engine and scope (a person's groups ordered by the host),
    /// cut groups with their totals.
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
            personal: self.personal,
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
