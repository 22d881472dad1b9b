//! The pre-aggregated planner, chosen for value→label keys, months, quarters and years over
//! a stored month index, and keys in the scope's index order, without a distinct count: the
//! inner select aggregates by the raw values, the outer maps or labels them and merges the
//! partials. Scope enters through `scoped::where_clause`.

use super::columns::{out_of, Out, P};
use super::compiled::Compiled;
use super::compiler::Compiler;
use super::ir::{Aggregate, Key, Query, QueryError};
use super::scoped::where_clause;
use crate::data::catalog::FieldType;
use crate::data::scope::Scope;

/// [`compile`] for the keys above without a distinct count: the inner select aggregates by
/// the keys' raw values (`r0…`, partial aggregates `p0…`), the grouped select
/// maps them and merges the partials. The same answer as mapping every row, with few rows
/// mapped and, where an index leads with the raw key, nothing sorted.
pub(super) fn compile_preaggregated(
    mut c: Compiler,
    q: &Query,
    scope: Option<&Scope>,
    filter_sql: Vec<String>,
    filter_params: Vec<P>,
) -> Result<Compiled, QueryError> {
    let bigint = if c.postgres { "BIGINT" } else { "INTEGER" };
    let mut inner = Vec::new();
    let mut select = Vec::new();
    let mut outs = Vec::new();
    for (i, k) in q.group_by.iter().enumerate() {
        let (raw, (sql, out)) = match k {
            Key::Field(name) | Key::Mapped(name, _, _) => {
                let f = c.field(name)?;
                (c.raw_key(&f), c.key(k, Some(&format!("r{i}")))?)
            }
            // A month, quarter or year: grouped by the stored month index, labelled after.
            Key::Period(name, unit) => {
                let f = c.field(name)?;
                let month = f
                    .month
                    .expect("the planner takes periods with a month index");
                let label = c.month_label(&format!("r{i}"), *unit);
                (c.raw_column(month), (label, Out::Text))
            }
        };
        inner.push(format!("{raw} AS r{i}"));
        select.push(format!("{sql} AS k{i}"));
        outs.push(out);
    }
    let key_params = std::mem::take(&mut c.params);
    for (i, a) in q.aggregates.iter().enumerate() {
        let (partial, merged, out) = match a {
            Aggregate::Count => (
                "COUNT(*)".to_string(),
                format!("CAST(SUM(p{i}) AS {bigint})"),
                Out::Int,
            ),
            Aggregate::CountOf(name) => {
                let f = c.field(name)?;
                (
                    format!("COUNT({})", f.column),
                    format!("CAST(SUM(p{i}) AS {bigint})"),
                    Out::Int,
                )
            }
            Aggregate::Sum(name) => {
                let f = c.field(name)?;
                if f.ty == FieldType::Text {
                    return Err(QueryError::Invalid(format!(
                        "field `{name}` is text; it cannot be summed"
                    )));
                }
                (
                    format!("SUM({})", f.column),
                    format!("CAST(SUM(p{i}) AS {bigint})"),
                    out_of(f.ty),
                )
            }
            Aggregate::Min(name) | Aggregate::Max(name) => {
                let f = c.field(name)?;
                let func = if matches!(a, Aggregate::Min(_)) {
                    "MIN"
                } else {
                    "MAX"
                };
                (
                    format!("{func}({})", f.column),
                    format!("{func}(p{i})"),
                    out_of(f.ty),
                )
            }
            Aggregate::CountDistinct(_) => unreachable!("no distinct counts here"),
        };
        inner.push(format!("{partial} AS p{i}"));
        select.push(format!("{merged} AS a{i}"));
        outs.push(out);
    }
    let (where_sql, where_params) = where_clause(&mut c, q, scope, filter_sql, filter_params)?;
    let from = c.tables();
    let raw: Vec<String> = (0..q.group_by.len()).map(|i| format!("r{i}")).collect();
    let keys: Vec<String> = (0..q.group_by.len()).map(|i| format!("k{i}")).collect();
    let grouped = format!(
        "SELECT {} FROM (SELECT {} FROM {from}{where_sql} GROUP BY {}) i GROUP BY {}",
        select.join(", "),
        inner.join(", "),
        raw.join(", "),
        keys.join(", ")
    );
    c.finish(q, grouped, key_params, where_params, outs)
}
