//! The engines' own order of a statement's groups, the oracle of the host's (`HostOrder`):
//! the statement the planners' grouped statements were wrapped in before the host ordered
//! them. A materialised CTE, its number of groups, `ORDER BY` the requested columns then the
//! keys (NULLs last on both engines; text `COLLATE "C"` on PostgreSQL, as SQLite's `BINARY`
//! and the host compare bytes), the limit, and after groups cut by it their totals.

use super::*;
use crate::data::query::columns::Out;
use crate::data::query::columns::P;
use crate::data::query::order::adds_up;
use crate::data::query::order::limit_of;
use crate::data::query::order::result_columns;
use crate::data::query::order::Wrapping;
use crate::data::query::order::TOTALS_ROW;

/// `grouped` ordered, counted and limited by the engine, with the totals of cut groups when
/// `how.totals`: the same answer `finish` gives by the host's order.
pub(super) fn wrap(
    q: &Query,
    grouped: String,
    params: Vec<P>,
    outs: Vec<Out>,
    how: Wrapping,
) -> Compiled {
    let Wrapping { postgres, totals } = how;
    let name = |i: usize| {
        if i < q.group_by.len() {
            format!("k{i}")
        } else {
            format!("a{}", i - q.group_by.len())
        }
    };
    // Text `COLLATE "C"` on PostgreSQL: by its bytes, as SQLite and the host order it.
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
    // The groups behind a fence, counted once and ordered (the wrapping every grouped
    // statement had before the host's order: docs/decisions/0036 and 0027).
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
    Compiled {
        sql,
        params,
        outs,
        columns: result_columns(q),
        limit,
        fold: None,
        order: None,
        full: None,
        plans: Plans::PerCall,
    }
}

/// The branch that appends, after the groups, one row answering `q` without its keys (NULL
/// keys, each aggregate over every group, `total_groups` [`TOTALS_ROW`]), when the groups
/// pass `limit` and `q` [`adds_up`]; no row when a sum would not fit in 64 bits (on
/// PostgreSQL checked before its cast, on SQLite bounded first by the float total of the
/// groups' magnitudes, as its `SUM` fails as it adds).
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
