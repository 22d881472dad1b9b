//! The period-set planner (schema v4), chosen for distinct loans per whole month or ISO week of
//! the history with a label map over the status: it counts loans per (period, set of statuses).
//! Organisation-wide without a filter it reads the import's counts of the sets (schema v7), or
//! by raw status its counts per status (v13); with a scope or a filter it joins the sets by
//! key to the loans `scoped::where_clause` keeps.

use super::columns::{Out, P};
use super::compiled::Compiled;
use super::compiler::{check_map, Compiler};
use super::fold::{Packed, SetFold};
use super::ir::{Aggregate, Key, PeriodUnit, Query, QueryError};
use super::order::{check_order, result_columns};
use super::period_set_sql::{counted_rows, partials, set_conditions, with_unlisted_rows, Partials};
use super::periods::{bounds_only, periods_between};
use crate::data::catalog::Dataset;
use crate::data::history_keys::UNLISTED_BIT;
use crate::data::report_store::Plans;
use crate::data::scope::Scope;

/// A query [`compile_period_sets`] answers: which key is the period, the table of its unit,
/// the window's period indexes with their labels, and each label's status bits.
pub(super) struct PeriodSets {
    pub(super) period_key: usize,
    pub(super) table: &'static str,
    /// The unit's sets of the snapshot's loans, counted per (period, set of bits).
    pub(super) counted: &'static str,
    /// The unit's loans of the snapshot, counted per (period, status text).
    pub(super) status_counted: &'static str,
    pub(super) periods: Vec<(i64, String)>,
    pub(super) labels: Vec<(String, i64)>,
    /// The key is the raw status (each listed status its own label), not a label map: the
    /// statuses without a bit of their own are then read from the history rows of the few
    /// (period, loan) sets that hold the unlisted bit. Holds the history rows' period column.
    pub(super) raw: Option<&'static str>,
}

/// Whether `q` counts distinct loans of history per (whole months or weeks, status mapped to
/// labels), reading only fields of the loan (constant per loan): then the period sets
/// (schema v4) answer it, alone when history is read alone (organisation-wide: the loan fields
/// the sets carry), else joined to the caller's loans. Every mapped status must have a bit of
/// its own (`history_keys::STATUS_BITS`) and the map a fallback label, so that every label is
/// exactly a set of bits; the predicates must be bounds that select whole periods.
pub(super) fn period_sets(c: &Compiler, q: &Query) -> Option<PeriodSets> {
    use crate::data::history_keys::{listed_bit, month_index, week_index, STATUS_BITS};
    let sets = Dataset::HISTORY_SETS;
    if q.dataset != Dataset::LosStatusHistory
        || q.distinct_on.as_deref() != Some(sets.loan)
        || q.group_by.len() != 2
    {
        return None;
    }
    let of_the_loan = |name: &str| {
        if c.history_only {
            sets.carried.iter().any(|(n, _)| *n == name)
        } else {
            name.starts_with("loan.")
        }
    };
    let aggregates_fit = q.aggregates.iter().all(|a| match a {
        Aggregate::Count => true,
        Aggregate::CountDistinct(_) => false,
        other => other.field().is_some_and(of_the_loan),
    });
    if !aggregates_fit {
        return None;
    }
    let period_key = q.group_by.iter().position(
        |k| matches!(k, Key::Period(f, PeriodUnit::Month | PeriodUnit::Week) if f == sets.instant),
    )?;
    let Key::Period(_, unit) = &q.group_by[period_key] else {
        return None;
    };
    // The other key: the status mapped to labels with a fallback, or the raw status.
    let map = match &q.group_by[1 - period_key] {
        Key::Mapped(status, pairs, Some(otherwise))
            if status == sets.status && check_map(status, pairs, Some(otherwise)).is_ok() =>
        {
            Some((pairs, otherwise))
        }
        Key::Field(status) if status == sets.status => None,
        _ => return None,
    };
    // The window: bounds on the period's field only, at period boundaries.
    let only_bounds = bounds_only(q, sets.instant);
    let (lo, hi) = *c.bounds.get(sets.instant)?;
    let window = periods_between(lo, hi, *unit)?;
    let whole = lo == window.start
        && window
            .ends
            .last()
            .is_some_and(|(end, _)| hi.checked_add(1) == Some(*end));
    if !only_bounds || !whole {
        return None;
    }
    // Each label's bits; a value mapped twice keeps its first label, as in `Compiler::key`.
    let mut labels: Vec<(String, i64)> = Vec::new();
    let mut add = |label: &str, bits: i64| match labels.iter_mut().find(|(l, _)| l == label) {
        Some((_, b)) => *b |= bits,
        None => labels.push((label.to_string(), bits)),
    };
    match map {
        Some((pairs, otherwise)) => {
            let mut mapped = 0_i64;
            for (value, label) in pairs {
                let bit = listed_bit(value)?;
                if mapped & bit == 0 {
                    mapped |= bit;
                    add(label, bit);
                }
            }
            let every = ((1_i64 << STATUS_BITS.len()) - 1) | UNLISTED_BIT;
            add(otherwise, every & !mapped);
        }
        None => {
            for status in STATUS_BITS {
                add(status, listed_bit(status)?);
            }
        }
    }
    // A set's labels are a 64-bit mask in the fold (`SetFold::new`).
    if labels.len() > 64 {
        return None;
    }
    let (table, counted, status_counted, index, row_period): (_, _, _, fn(i64) -> i64, _) =
        match unit {
            PeriodUnit::Month => (
                sets.months,
                sets.counted_months,
                sets.status_counted_months,
                month_index,
                sets.row_month,
            ),
            _ => (
                sets.weeks,
                sets.counted_weeks,
                sets.status_counted_weeks,
                week_index,
                sets.row_week,
            ),
        };
    let mut start = window.start;
    let mut periods = Vec::with_capacity(window.ends.len());
    for (end, label) in window.ends {
        periods.push((index(start), label));
        start = end;
    }
    Some(PeriodSets {
        period_key,
        table,
        counted,
        status_counted,
        periods,
        labels,
        raw: map.is_none().then_some(row_period),
    })
}

/// [`compile`] for the queries [`period_sets`] accepts. The period sets hold one row per
/// (period, loan) with the union of its statuses' bits, so no history row is read and nothing
/// is de-duplicated: the statement counts the loans per (period, set of bits), a few hundred
/// to a few hundred thousand groups, and the host folds each set into the labels that hold one
/// of its bits ([`SetFold`]). A loan counts once per (period, label) however many of its
/// statuses the label has, exactly as `DISTINCT` would.
pub(super) fn compile_period_sets(
    c: Compiler,
    q: &Query,
    plan: PeriodSets,
    scope: Option<&Scope>,
    filter_sql: Vec<String>,
    filter_params: Vec<P>,
) -> Result<Compiled, QueryError> {
    let bigint = if c.postgres { "BIGINT" } else { "INTEGER" };
    check_order(q)?;
    // With the raw status as the key, the sets that hold the unlisted bit are kept one per
    // loan (`lk`; every other set's `lk` is NULL, so they are still counted per set of bits),
    // and the (period, unlisted status) rows are merged from their partials: the values each
    // reads (`x.p…`), then their merges, named as the sets' (`c`, `p…`).
    let lk_column = plan.raw.is_some().then(|| {
        format!("CASE WHEN (r.status_bits & {UNLISTED_BIT}) <> 0 THEN r.loan_key END AS lk")
    });
    let parts = partials(&c, q, bigint)?;
    let (first, last) = (plan.periods[0].0, plan.periods[plan.periods.len() - 1].0);
    let unfiltered = filter_sql.is_empty();
    let generic = generic_plan(&c, unfiltered, scope);
    let from = format!("{} JOIN loans l ON l.key = r.loan_key", plan.table);
    let (wheres, params) =
        set_conditions(&c, scope, filter_sql, filter_params, generic, first, last)?;
    let partials = parts.carried[1..]
        .iter()
        .map(|p| format!(", x.{p}"))
        .collect::<String>();
    // The sets counted, kept one per loan when they hold the unlisted bit (`lk`) or not.
    let counted_by = |lk: Option<&String>| {
        format!(
            "SELECT {per_set}{lk_col} FROM {from} WHERE {wheres} GROUP BY r.period_index, r.status_bits{by}",
            per_set = parts.per_set.join(", "),
            lk_col = lk.map(|col| format!(", {col}")).unwrap_or_default(),
            by = if lk.is_some() { ", lk" } else { "" },
            wheres = wheres.join(" AND "),
        )
    };
    let from_counted = |cols: &[&str], keys: &str, table: &str| {
        counted_rows(bigint, cols, keys, table, (first, last))
    };
    let sets_rows = match &parts.from_counts {
        Some(cols) => from_counted(cols, "r.status_bits, CAST(NULL AS TEXT)", plan.counted),
        None => {
            format!("SELECT CAST(x.pi AS {bigint}), x.m, CAST(NULL AS TEXT), x.c{partials} FROM x")
        }
    };
    let sets_only = sets_alone_first(&plan, &parts, scope)
        .then(|| format!("WITH x AS ({}) {sets_rows}", counted_by(None)));
    let sql = match (plan.raw, &parts.from_counts) {
        (None, Some(_)) => sets_rows,
        // Organisation-wide by raw status: the loans counted per (period, status text)
        // (schema v13), listed or not; the fold gives each row the label of its text. The
        // counted sets would be read whole (7,800 a month at 1M loans), each given to its
        // statuses, then the sets holding the unlisted bit one per loan.
        (Some(_), Some(cols)) => from_counted(
            cols,
            &format!("CAST(NULL AS {bigint}), r.status"),
            plan.status_counted,
        ),
        (None, None) => format!("WITH x AS ({}) {sets_rows}", counted_by(lk_column.as_ref())),
        // The unlisted rows too (raw status only; `with_unlisted_rows`).
        (Some(row_period), None) => {
            let carried_u = parts
                .carried
                .iter()
                .map(|p| format!(", u.{p}"))
                .collect::<String>();
            with_unlisted_rows(
                &c,
                row_period,
                &counted_by(lk_column.as_ref()),
                &parts.per_row.join(", "),
                &partials,
                &carried_u,
                &sets_rows,
            )
        }
    };
    let fold = SetFold::new(
        q,
        plan.period_key,
        &plan.periods,
        &plan.labels,
        parts.merges,
        parts.outs,
    );
    // A person's loans without a filter, aggregating only what their rows carry: the rows of
    // `person_loans` (schema v15), the window's sets kept and counted by the fold.
    let person = (!c.history_only && unfiltered)
        .then(|| scope.and_then(Scope::person_predicate))
        .flatten()
        .zip(person_partials(q));
    let compiled = Compiled {
        sql,
        params,
        outs: parts.statement_outs,
        columns: result_columns(q),
        limit: fold.limit,
        fold: Some(fold),
        order: None,
        full: None,
        plans: if generic {
            Plans::Generic
        } else {
            Plans::PerCall
        },
    };
    if let Some(((predicate, values), partials)) = person {
        return Ok(person_statement(
            &plan, first, last, compiled, predicate, values, partials,
        ));
    }
    Ok(match sets_only {
        None => compiled,
        Some(sql) => sets_first(compiled, sql),
    })
}

/// For each aggregate over a field, in order, whether it counts the field's values (else it
/// merges them) and the column of a person's loan row that carries it; `None` when one reads
/// a field the rows do not carry.
fn person_partials(q: &Query) -> Option<Vec<(bool, &'static str)>> {
    let sets = Dataset::HISTORY_SETS;
    q.aggregates
        .iter()
        .filter_map(|a| a.field().map(|name| (a, name)))
        .map(|(a, name)| {
            let (_, column) = sets.person_carried.iter().find(|(n, _)| *n == name)?;
            Some((matches!(a, Aggregate::CountOf(_)), *column))
        })
        .collect()
}

/// A person's statement over the rows of `person_loans` (schema v15): the window's sets of
/// each loan, kept and counted by the fold, with `compiled` (the joined statement) asked for
/// when a set holds a status without a bit of its own (by raw status).
fn person_statement(
    plan: &PeriodSets,
    first: i64,
    last: i64,
    compiled: Compiled,
    predicate: String,
    values: Vec<String>,
    partials: Vec<(bool, &'static str)>,
) -> Compiled {
    let sets = Dataset::HISTORY_SETS;
    let sets_column = if plan.table == sets.months {
        sets.person_months
    } else {
        sets.person_weeks
    };
    let mut statement_outs = vec![Out::Int, Out::Text];
    statement_outs.extend(partials.iter().map(|_| Out::Int));
    let mut fold = compiled.fold.clone().expect("the period sets fold");
    fold.sets_only = plan.raw.is_some();
    fold.packed = Some(Packed::new(
        first,
        last,
        partials.iter().map(|(count, _)| *count).collect(),
    ));
    Compiled {
        sql: format!(
            "SELECT p.loan_key, {sets_column}{carried} FROM {table} WHERE {predicate}",
            carried = partials
                .iter()
                .map(|(_, column)| format!(", {column}"))
                .collect::<String>(),
            table = sets.person_loans,
        ),
        params: values.into_iter().map(P::T).collect(),
        outs: statement_outs,
        columns: compiled.columns.clone(),
        limit: compiled.limit,
        fold: Some(fold),
        order: None,
        // A person's unfiltered statement: generic on PostgreSQL, as the joined one.
        plans: compiled.plans,
        // By raw status, a set holding a status without a bit of its own asks for the
        // joined statement that reads its history rows.
        full: plan.raw.is_some().then(|| Box::new(compiled)),
    }
}

/// `sql` (a person's sets counted alone) run first, with `compiled` (which also reads the
/// unlisted rows) asked for only when a set holds the unlisted bit.
fn sets_first(compiled: Compiled, sql: String) -> Compiled {
    let mut fold = compiled.fold.clone();
    if let Some(f) = fold.as_mut() {
        f.sets_only = true;
    }
    Compiled {
        sql,
        params: compiled.params.clone(),
        outs: compiled.outs.clone(),
        columns: compiled.columns.clone(),
        limit: compiled.limit,
        fold,
        order: None,
        plans: compiled.plans,
        full: Some(Box::new(compiled)),
    }
}

/// A person's sets without a filter, on PostgreSQL: one generic plan per session (`Plans`),
/// with the window written as bounds of (loan, period) on the sets' loan index, which only
/// the person's loans can reach. Written as bounds of the period alone, the generic plan
/// (which prices a person at 3,000 loans) read a short window's every set by its period
/// and hashed them: an Agent's four months 26 ms, against 2 ms planned for its values.
fn generic_plan(c: &Compiler, unfiltered: bool, scope: Option<&Scope>) -> bool {
    c.postgres && !c.history_only && unfiltered && scope.is_some_and(Scope::is_personal)
}

/// A person's loans (an Agent's, a referrer's, a ConciergeKey's officers'), by raw status,
/// first count their sets alone, as a label map does: a few hundred loans seldom have a
/// status without a bit of its own, and the statement that also reads those took
/// PostgreSQL a third longer to plan and run for an Agent's year of months. Only when a
/// set holds the unlisted bit does the fold ask for that one (`Compiled::full`). A
/// company's or a filtered organisation's loans nearly always hold one somewhere: the
/// first statement would be spent for nothing (an Admin's filtered month, 187 → 249 ms on
/// SQLite), so they run the full one alone. Organisation-wide, the import's counts per
/// status (schema v13) name every status.
fn sets_alone_first(plan: &PeriodSets, parts: &Partials, scope: Option<&Scope>) -> bool {
    plan.raw.is_some() && parts.from_counts.is_none() && scope.is_some_and(Scope::is_personal)
}
