//! The SQL text of the period-set planner (`plan_period_sets.rs`): each aggregate's partials
//! per set and per unlisted row, the conditions on the sets read, the window's rows of the
//! import's counts, and the statement that also reads the unlisted rows of history.

use super::columns::{out_of, Out, P};
use super::compiler::Compiler;
use super::fold::Merge;
use super::ir::{Aggregate, Query, QueryError};
use super::scoped::scope_condition;
use crate::data::catalog::{Dataset, FieldType};
use crate::data::history_keys::UNLISTED_BIT;
use crate::data::scope::Scope;
/// What each aggregate adds to the period-set statements: its partial per set (`p…`), its
/// merge per (period, unlisted status) row and in the fold, the statement's column kinds, and,
/// organisation-wide, the import's counted column that holds it.
pub(super) struct Partials {
    pub(super) per_set: Vec<String>,
    pub(super) per_row: Vec<String>,
    pub(super) carried: Vec<String>,
    pub(super) merges: Vec<(Merge, Option<usize>)>,
    pub(super) outs: Vec<Out>,
    pub(super) statement_outs: Vec<Out>,
    pub(super) from_counts: Option<Vec<&'static str>>,
}

/// The [`Partials`] of `q`'s aggregates, each field's column the sets' own (alone) or the
/// loan's (joined).
pub(super) fn partials(c: &Compiler, q: &Query, bigint: &str) -> Result<Partials, QueryError> {
    let sets = Dataset::HISTORY_SETS;
    let mut per_set = vec![
        "r.period_index AS pi".to_string(),
        "r.status_bits AS m".to_string(),
        "COUNT(*) AS c".to_string(),
    ];
    let mut per_row = vec!["COUNT(*) AS c".to_string()];
    let mut carried = vec!["c".to_string()];
    let mut merges = Vec::new();
    let mut outs = Vec::new();
    // The statement's columns: period, bits, unlisted status, count, then the partials, all
    // integers but a text's minimum or maximum (PostgreSQL's `SUM` of a BIGINT is NUMERIC:
    // cast back, as the merge in SQL did).
    let mut statement_outs = vec![Out::Int, Out::Int, Out::Text, Out::Int];
    // Organisation-wide (history alone), the statement reads the import's counts (schema v7),
    // which hold each partial of every field the sets carry: `Some` exactly then.
    let mut from_counts = c.history_only.then(Vec::new);
    for a in &q.aggregates {
        let Some(name) = a.field() else {
            merges.push((Merge::Sum, None));
            outs.push(Out::Int);
            continue;
        };
        if let Some(cols) = from_counts.as_mut() {
            let Some((_, [count, sum, min, max])) = sets.counted.iter().find(|(n, _)| *n == name)
            else {
                return Err(QueryError::Invalid(format!(
                    "field `{name}` is carried by the period sets but not counted by the import"
                )));
            };
            cols.push(match a {
                Aggregate::CountOf(_) => *count,
                Aggregate::Sum(_) => *sum,
                Aggregate::Min(_) => *min,
                _ => *max,
            });
        }
        let i = carried.len() - 1;
        let f = c.field(name)?;
        // Alone, the sets' own column; joined, the loan's (`l.…`).
        let column = if c.history_only {
            sets.carried
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, col)| *col)
                .ok_or_else(|| QueryError::Invalid(format!("field `{name}` is not carried")))?
        } else {
            f.column
        };
        if f.ty == FieldType::Text && matches!(a, Aggregate::Sum(_)) {
            return Err(QueryError::Invalid(format!(
                "field `{name}` is text; it cannot be summed"
            )));
        }
        let (partial, merge, out) = match a {
            Aggregate::CountOf(_) => ("COUNT", Merge::Sum, Out::Int),
            Aggregate::Sum(_) => ("SUM", Merge::Sum, out_of(f.ty)),
            Aggregate::Min(_) => ("MIN", Merge::Min, out_of(f.ty)),
            _ => ("MAX", Merge::Max, out_of(f.ty)),
        };
        let sql_merge = match merge {
            Merge::Sum => "SUM",
            Merge::Min => "MIN",
            Merge::Max => "MAX",
        };
        let (set_value, row_value) = if matches!(out, Out::Text) {
            statement_outs.push(Out::Text);
            (
                format!("{partial}({column})"),
                format!("{sql_merge}(d.p{i})"),
            )
        } else {
            statement_outs.push(Out::Int);
            (
                format!("CAST({partial}({column}) AS {bigint})"),
                format!("CAST({sql_merge}(d.p{i}) AS {bigint})"),
            )
        };
        per_set.push(format!("{set_value} AS p{i}"));
        per_row.push(format!("{row_value} AS p{i}"));
        carried.push(format!("p{i}"));
        merges.push((merge, Some(i)));
        outs.push(out);
    }
    Ok(Partials {
        per_set,
        per_row,
        carried,
        merges,
        outs,
        statement_outs,
        from_counts,
    })
}

/// The statement by raw status that also reads the unlisted rows: for each set kept one per
/// loan (`counted`), its history rows with the unlisted bit in that period (by the history's
/// key, which leads with the loan), distinct per (period, loan, status). Usually there are
/// none; the sets are not read again (`MATERIALIZED`). PostgreSQL cannot know how few:
/// `LATERAL` holds it to one keyed lookup per such set, and `OFFSET 0` keeps the planner from
/// pulling the subquery up into a join (it did: a parallel scan of the whole history for its
/// bit, 590 ms where the sets took 60).
pub(super) fn with_unlisted_rows(
    c: &Compiler,
    row_period: &str,
    counted: &str,
    per_row: &str,
    partials: &str,
    carried_u: &str,
    sets_rows: &str,
) -> String {
    let sets = Dataset::HISTORY_SETS;
    let bigint = if c.postgres { "BIGINT" } else { "INTEGER" };
    let rows = if c.postgres {
        format!(
            "x CROSS JOIN LATERAL (SELECT {status} AS st FROM {table} WHERE h.loan_key = x.lk \
             AND {row_period} = x.pi AND {bit} = {UNLISTED_BIT} OFFSET 0) hh",
            status = sets.row_status,
            table = sets.rows,
            bit = sets.row_bit,
        )
    } else {
        // `CROSS JOIN`: the sets first. Without statistics, newer SQLite (3.46 bundled
        // by rusqlite) read the whole history first and looked the sets up in an
        // automatic index (340 ms for any caller, even an Agent's handful of sets).
        format!(
            "x CROSS JOIN {table} ON h.loan_key = x.lk AND {row_period} = x.pi AND {bit} = {UNLISTED_BIT}",
            table = sets.rows,
            bit = sets.row_bit,
        )
    };
    let st = if c.postgres { "hh.st" } else { sets.row_status };
    format!(
        "WITH x AS MATERIALIZED ({counted}), \
         u AS (SELECT d.pi, d.st, {per_row} FROM (SELECT DISTINCT x.pi, x.lk, {st} AS st{partials} \
         FROM {rows} WHERE x.lk IS NOT NULL) d GROUP BY d.pi, d.st) \
         {sets_rows} \
         UNION ALL SELECT CAST(u.pi AS {bigint}), CAST(NULL AS {bigint}), u.st{carried_u} FROM u",
    )
}

/// The conditions on the sets read and their parameters: with a scope or a filter, the
/// loans they keep (the sets joined to them by key; history alone is answered from the
/// counts and never gets here), then the window's periods (the key's range), as bounds of
/// (loan, period) for the `generic` plan. Period indexes are integers the host computed;
/// every text is a parameter.
pub(super) fn set_conditions(
    c: &Compiler,
    scope: Option<&Scope>,
    filter_sql: Vec<String>,
    filter_params: Vec<P>,
    generic: bool,
    first: i64,
    last: i64,
) -> Result<(Vec<String>, Vec<P>), QueryError> {
    let mut params = Vec::new();
    let mut wheres = Vec::new();
    if !c.history_only {
        let (sql, scope_params) = scope_condition(scope)?;
        wheres.push(sql);
        params.extend(scope_params);
        wheres.extend(filter_sql);
        params.extend(filter_params);
    }
    wheres.push(if generic {
        format!(
            "(r.loan_key, r.period_index) >= (l.key, {first}) \
             AND (r.loan_key, r.period_index) <= (l.key, {last})"
        )
    } else {
        format!("r.period_index >= {first} AND r.period_index <= {last}")
    });
    Ok((wheres, params))
}

/// The window's rows of a table the import counts (of sets, schema v7, or of statuses,
/// v13), as the statement's columns: period, `keys` (bits, status), loans, partials (`cols`).
pub(super) fn counted_rows(
    bigint: &str,
    cols: &[&str],
    keys: &str,
    table: &str,
    (first, last): (i64, i64),
) -> String {
    format!(
        "SELECT CAST(r.period_index AS {bigint}), {keys}, r.loans{cols} \
         FROM {table} WHERE r.period_index >= {first} AND r.period_index <= {last}",
        cols = cols.iter().map(|c| format!(", {c}")).collect::<String>(),
    )
}
