//! The warehouse-counts planner (schemas v8 and v10), chosen for the distinct values a
//! warehouse dataset counts per (month or ISO week, key) over a window — the milestones'
//! loans, the deals per stage: the window's whole periods are read from the import's counts,
//! and its partial first and last periods, if any, from the rows.

use super::columns::{Out, P};
use super::compiled::Compiled;
use super::compiler::Compiler;
use super::ir::{Aggregate, Key, PeriodUnit, Query, QueryError};
use super::periods::{bounds_only, instant_bound};
use crate::data::catalog::WarehouseCounts;
use crate::data::history_keys::{month_index, month_start, week_index, week_start};

/// A query [`compile_warehouse_counts`] answers.
pub(super) struct WarehousePlan {
    counts: WarehouseCounts,
    period_key: usize,
    unit: PeriodUnit,
    /// The counts of the unit.
    table: &'static str,
    /// The whole periods, first and last (inclusive).
    whole: (i64, i64),
    /// The partial periods at the window's ends: (period index, first and last instant).
    edges: Vec<(i64, i64, i64)>,
}

/// Instants of years 0000 to 9999, the only ones an import takes (RFC 3339's four-digit years).
const FIRST: i64 = -62_167_219_200_000;
const LAST: i64 = 253_402_300_799_999;

/// The window the predicates bound `field` to (both ends inclusive), when they are only
/// bounds on it and each is an instant ([`instant_bound`]); an open end is the first or last
/// instant an import takes, so that "everything before the end of this week" reads the
/// counts too.
fn window(q: &Query, field: &str) -> Option<(i64, i64)> {
    if !bounds_only(q, field) {
        return None;
    }
    let (mut lo, mut hi) = (FIRST, LAST);
    for (_, condition) in &q.predicates {
        let (from, to) = instant_bound(condition)?;
        lo = from.map_or(lo, |from| lo.max(from));
        hi = to.map_or(hi, |to| hi.min(to));
    }
    Some((lo, hi))
}

/// Whether `q` counts a warehouse dataset's distinct values per (whole months or weeks, key),
/// with no other condition than bounds on the instant (an open end included) that hold at
/// least one whole period.
pub(super) fn warehouse_counts(q: &Query) -> Option<WarehousePlan> {
    let w = q.dataset.warehouse_counts()?;
    if q.distinct_on.is_some()
        || q.filter.is_some()
        || q.group_by.len() != 2
        || !q
            .aggregates
            .iter()
            .all(|a| matches!(a, Aggregate::CountDistinct(f) if f == w.counted))
    {
        return None;
    }
    let period_key = q.group_by.iter().position(
        |k| matches!(k, Key::Period(f, PeriodUnit::Month | PeriodUnit::Week) if f == w.instant),
    )?;
    let Key::Period(_, unit) = &q.group_by[period_key] else {
        return None;
    };
    if !matches!(&q.group_by[1 - period_key], Key::Field(f) if f == w.key) {
        return None;
    }
    let (lo, hi) = window(q, w.instant)?;
    if lo > hi {
        return None;
    }
    type Numbering = fn(i64) -> i64;
    let (index, start, table): (Numbering, Numbering, _) = match unit {
        PeriodUnit::Month => (month_index, month_start, w.months),
        _ => (week_index, week_start, w.weeks),
    };
    let first = if start(index(lo)) == lo {
        index(lo)
    } else {
        index(lo) + 1
    };
    let last = if start(index(hi) + 1) == hi + 1 {
        index(hi)
    } else {
        index(hi) - 1
    };
    if first > last {
        return None;
    }
    let mut edges = Vec::new();
    if lo < start(first) {
        edges.push((index(lo), lo, start(first) - 1));
    }
    if hi >= start(last + 1) {
        edges.push((index(hi), start(last + 1), hi));
    }
    Some(WarehousePlan {
        counts: w,
        period_key,
        unit: *unit,
        table,
        whole: (first, last),
        edges,
    })
}

/// [`compile`] for the queries [`warehouse_counts`] accepts: the counts of the whole periods,
/// beside each partial period's distinct counted values per key read from its rows (by the
/// instant's index), labelled from the period index as the row-by-row plan labels instants.
pub(super) fn compile_warehouse_counts(
    c: Compiler,
    q: &Query,
    plan: WarehousePlan,
) -> Result<Compiled, QueryError> {
    let w = plan.counts;
    let (first, last) = plan.whole;
    let mut parts = vec![format!(
        "SELECT c.period_index AS pi, c.{} AS ms, c.{} AS n FROM {} c \
         WHERE c.period_index >= {first} AND c.period_index <= {last}",
        w.row_key, w.count, plan.table
    )];
    let mut params = Vec::new();
    for (index, from, to) in &plan.edges {
        parts.push(format!(
            "SELECT {index} AS pi, m.{key} AS ms, COUNT(DISTINCT m.{loan}) AS n FROM {rows} m \
             WHERE m.{at} >= ? AND m.{at} <= ? GROUP BY m.{key}",
            key = w.row_key,
            loan = w.row_counted,
            rows = w.rows,
            at = w.row_instant,
        ));
        params.push(P::I(*from));
        params.push(P::I(*to));
    }
    // Weeks go out as their index (a 64-bit integer, as the executors read integers),
    // labelled by the executor (`Out::Week`).
    let (label, period_out) = match plan.unit {
        PeriodUnit::Month => (c.month_label("g.pi", PeriodUnit::Month), Out::Text),
        _ => ("CAST(g.pi AS BIGINT)".to_string(), Out::Week),
    };
    let mut keys = vec![String::new(), String::new()];
    keys[plan.period_key] = format!("{label} AS k{}", plan.period_key);
    keys[1 - plan.period_key] = format!("g.ms AS k{}", 1 - plan.period_key);
    let aggregates = (0..q.aggregates.len()).map(|i| format!("g.n AS a{i}"));
    let grouped = format!(
        "SELECT {} FROM ({}) g",
        keys.into_iter()
            .chain(aggregates)
            .collect::<Vec<_>>()
            .join(", "),
        parts.join(" UNION ALL ")
    );
    let mut outs = vec![Out::Text, Out::Text];
    outs[plan.period_key] = period_out;
    outs.extend(q.aggregates.iter().map(|_| Out::Int));
    c.finish(q, grouped, Vec::new(), params, outs)
}
