//! Planning: `compile` checks the query, compiles the filter, decides whether history is read
//! alone or a covering index serves the group-by, and hands the query to one planner: the
//! snapshot's totals (`plan_totals`), the period sets (`plan_period_sets`), pre-aggregated
//! partials (`plan_preaggregated`), the warehouse's counts (`plan_warehouse`), or the
//! row-by-row statement written here. Every planner over the loans takes its `WHERE` clause
//! from `scoped::where_clause`, the one place the caller's scope is AND-ed in, except the
//! totals, which only a scope of every loan or of one company's loans reads, with the
//! company's condition from `scoped::TotalsScope`.

use super::columns::{out_of, Out, P};
use super::compiled::Compiled;
use super::compiler::Compiler;
use super::filter::compile_filter;
use super::ir::{Aggregate, Condition, Key, PeriodUnit, Query, QueryError};
use super::periods::{instant_bounds, month_condition};
use super::plan_period_sets::{compile_period_sets, period_sets};
use super::plan_preaggregated::compile_preaggregated;
use super::plan_totals::{compile_totals, loan_totals};
use super::plan_warehouse::{compile_warehouse_counts, warehouse_counts};
use super::scoped::where_clause;
use crate::data::catalog::{Dataset, FieldType};
use crate::data::report_store::Plans;
use crate::data::scope::Scope;

/// Whether the query's group-by keys (each as is, or the first mapped to labels) are a
/// leading prefix of a covering index's keys, in order, and it reads nothing else but fields
/// of that index.
pub(super) fn covered_group(q: &Query) -> bool {
    let mut keys = Vec::with_capacity(q.group_by.len());
    for (i, k) in q.group_by.iter().enumerate() {
        match k {
            Key::Field(name) => keys.push(name.as_str()),
            Key::Mapped(name, _, _) if i == 0 => keys.push(name.as_str()),
            _ => return false,
        }
    }
    let Some((index, held)) = Dataset::COVERED_GROUPS
        .iter()
        .find(|(index, _)| !keys.is_empty() && index.starts_with(&keys))
    else {
        return false;
    };
    q.distinct_on.is_none()
        && q.aggregates
            .iter()
            .filter_map(Aggregate::field)
            .all(|n| index.contains(&n) || held.contains(&n))
}

/// A month, quarter or year key over a date-time field the row also stores as a month index:
/// that column (the key groups by it and labels the groups).
pub(super) fn stored_month(dataset: Dataset, k: &Key) -> Option<&'static str> {
    match k {
        Key::Period(name, unit) if *unit != PeriodUnit::Week => dataset.field(name)?.month,
        _ => None,
    }
}

/// Whether a month, quarter or year over a stored month index (which leads a covering index)
/// is the only key, and the query reads nothing else but what that index holds
/// (`Dataset::MONTH_HELD`), with predicates only on that field that its month index states
/// exactly ([`month_condition`]): the whole snapshot, or a range of whole months, read in key
/// order from one index.
pub(super) fn covered_month(q: &Query) -> bool {
    let [k @ Key::Period(name, _)] = q.group_by.as_slice() else {
        return false;
    };
    stored_month(q.dataset, k).is_some()
        && q.distinct_on.is_none()
        && q.aggregates
            .iter()
            .filter_map(Aggregate::field)
            .all(|n| Dataset::MONTH_HELD.contains(&n))
        && q.predicates
            .iter()
            .all(|(n, c)| n == name && month_condition(c).is_some())
}

/// Whether every `loan.*` field the query reads is one history rows carry.
pub(super) fn reads_only_carried(q: &Query) -> bool {
    let keys = q.group_by.iter().map(|k| match k {
        Key::Field(n) | Key::Period(n, _) | Key::Mapped(n, _, _) => n.as_str(),
    });
    let mut names = keys
        .chain(q.aggregates.iter().filter_map(Aggregate::field))
        .chain(q.distinct_on.as_deref())
        .chain(q.predicates.iter().map(|(n, _)| n.as_str()));
    names.all(|n| !n.starts_with("loan.") || Dataset::HISTORY_CARRIED.iter().any(|(c, _)| *c == n))
}

pub(super) fn compile(
    q: &Query,
    scope: Option<&Scope>,
    can_read_names: bool,
    postgres: bool,
) -> Result<Compiled, QueryError> {
    if let Some(capability) = q.dataset.read_by() {
        return Err(QueryError::Invalid(format!(
            "dataset `{}` is read with `{capability}`, not queried",
            q.dataset.as_str()
        )));
    }
    if q.dataset.only_listed() {
        return Err(QueryError::Invalid(format!(
            "dataset `{}` is only listed (`listing.list-page`), not queried",
            q.dataset.as_str()
        )));
    }
    let mut compiled = compile_statement(q, scope, can_read_names, postgres)?;
    if postgres && compiled.plans == Plans::PerCall {
        compiled.plans = plans_for(q, scope);
        if let Some(full) = compiled.full.as_mut() {
            full.plans = compiled.plans;
        }
    }
    Ok(compiled)
}

/// [`compile`]'s statement, by the planner that answers `q`.
fn compile_statement(
    q: &Query,
    scope: Option<&Scope>,
    can_read_names: bool,
    postgres: bool,
) -> Result<Compiled, QueryError> {
    let mut c = Compiler {
        dataset: q.dataset,
        can_read_names,
        lists_borrowers: false,
        postgres,
        params: vec![],
        history_only: false,
        covered_group: false,
        scope_first: scope.is_some_and(|s| !s.all),
        personal: scope.is_some_and(Scope::is_personal),
        scope_order: scope.and_then(|s| s.ordered_by()).filter(|_| !postgres),
        bounds: instant_bounds(q),
    };
    if q.aggregates.is_empty() {
        return Err(QueryError::Invalid(
            "a query needs at least one aggregate (plugins read aggregates, not rows)".into(),
        ));
    }
    if q.group_by.len() > 8 || q.aggregates.len() > 16 {
        return Err(QueryError::Invalid(
            "at most 8 group-by keys and 16 aggregates".into(),
        ));
    }
    // The filter first (on its own parameters): whether it constrains anything decides
    // whether history rows must be joined to their loans.
    let (filter_sql, filter_params) = filter_first(&mut c, q)?;
    // Organisation-wide or one company's, without a filter, over keys the import totals: its
    // totals (schema v11, per company v12).
    if let Some((t, totals_scope)) = loan_totals(q, scope, !filter_sql.is_empty()) {
        return compile_totals(c, q, t, totals_scope);
    }
    c.history_only = q.dataset == Dataset::LosStatusHistory
        && filter_sql.is_empty()
        && scope.is_some_and(|s| s.all)
        && reads_only_carried(q);
    c.covered_group = covered(q, scope, filter_sql.is_empty());
    let preaggregate = preaggregates(&c, q);
    if preaggregate {
        return compile_preaggregated(c, q, scope, filter_sql, filter_params);
    }
    if let Some(plan) = period_sets(&c, q) {
        return compile_period_sets(c, q, plan, scope, filter_sql, filter_params);
    }
    if let Some(plan) = warehouse_counts(q) {
        return compile_warehouse_counts(c, q, plan);
    }
    // Inner select list: keys (k0…), the distinct field (dd), aggregate sources (s0…).
    let mut inner = Vec::new();
    let mut outs = Vec::new();
    for (i, k) in q.group_by.iter().enumerate() {
        let (sql, out) = c.key(k, None)?;
        inner.push(format!("{sql} AS k{i}"));
        outs.push(out);
    }
    let key_params = std::mem::take(&mut c.params);
    if let Some(d) = &q.distinct_on {
        let f = c.field(d)?;
        inner.push(format!("{} AS dd", f.identity()));
    }
    let outer_aggs = aggregate_columns(&mut c, q, &mut inner, &mut outs)?;

    let (where_sql, where_params) = where_clause(&mut c, q, scope, filter_sql, filter_params)?;

    let distinct = if q.distinct_on.is_some() {
        "DISTINCT "
    } else {
        ""
    };
    let inner_list = if inner.is_empty() {
        "1 AS one".to_string()
    } else {
        inner.join(", ")
    };
    let from = c.tables();
    let inner_sql = format!("SELECT {distinct}{inner_list} FROM {from}{where_sql}");
    let keys: Vec<String> = (0..q.group_by.len()).map(|i| format!("k{i}")).collect();
    let group = if keys.is_empty() {
        String::new()
    } else {
        format!(" GROUP BY {}", keys.join(", "))
    };
    let mut select = keys.clone();
    select.extend(outer_aggs);
    // Weeks are grouped, ordered and returned as integers (`Compiler::key`), labelled by
    // the executor as it decodes them (`Out::Week`): the same order, as an ISO week's label
    // sorts as its number does (years 0000-9999).
    let grouped = format!("SELECT {} FROM ({inner_sql}) i{group}", select.join(", "));

    c.finish(q, grouped, key_params, where_params, outs)
}

/// The query's loan filter compiled on its own parameters (a dataset without loans takes
/// none).
pub(super) fn filter_first(
    c: &mut Compiler,
    q: &Query,
) -> Result<(Vec<String>, Vec<P>), QueryError> {
    Ok(match &q.filter {
        None => (vec![], vec![]),
        Some(_) if !q.dataset.has_loans() => {
            return Err(QueryError::Invalid(format!(
                "dataset `{}` takes no loan filter",
                q.dataset.as_str()
            )))
        }
        Some(f) => {
            let sql = compile_filter(c, f)?;
            (sql, std::mem::take(&mut c.params))
        }
    })
}

/// Whether `q`'s one key is read from a covering index: organisation-wide, a key's covering
/// index; for one company, its months of the status date (a Processor's pipeline trend) in
/// `loans_company_status_months` after the company (schema v9), instead of each loan's date
/// read through `loans_company`.
fn covered(q: &Query, scope: Option<&Scope>, unfiltered: bool) -> bool {
    let company_months = scope.is_some_and(Scope::only_company)
        && covered_month(q)
        && matches!(q.group_by.as_slice(), [Key::Period(name, _)] if name == "statusDate");
    q.dataset == Dataset::Loans
        && unfiltered
        && (company_months
            || (scope.is_some_and(|s| s.all)
                && ((q.predicates.is_empty() && covered_group(q)) || covered_month(q))))
}

/// Whether `q` is aggregated by the raw values first: a value→label key, a month, quarter or
/// year over a stored month index, or a key in the scope's order (a company's loans by
/// status: grouped right over the loans, SQLite reads that order; grouped over the
/// row-by-row select, it sorted the company's loans), over many rows: few groups, read in
/// index order where an index serves them, then labelled and merged.
fn preaggregates(c: &Compiler, q: &Query) -> bool {
    let in_scope_order = |k: &Key| match k {
        Key::Field(name) => q
            .dataset
            .field(name)
            .is_some_and(|f| c.scope_order == Some(f.column)),
        _ => false,
    };
    // A value→label key, a month, quarter or year over a stored month index, or a key in the
    // scope's order, over many rows: aggregate by the raw values first (few groups, read in
    // index order where an index serves them), then label and merge those few rows.
    let raw_first = |k: &Key| {
        matches!(k, Key::Mapped(..)) || stored_month(q.dataset, k).is_some() || in_scope_order(k)
    };
    q.distinct_on.is_none()
        && q.group_by.iter().any(raw_first)
        && q.group_by
            .iter()
            .all(|k| !matches!(k, Key::Period(..)) || raw_first(k))
        && q.aggregates
            .iter()
            .all(|a| !matches!(a, Aggregate::CountDistinct(_)))
}

/// The aggregates' outer columns (`a0…`), their sources added to the inner select (`s0…`)
/// and their kinds to `outs`.
fn aggregate_columns(
    c: &mut Compiler,
    q: &Query,
    inner: &mut Vec<String>,
    outs: &mut Vec<Out>,
) -> Result<Vec<String>, QueryError> {
    let mut outer_aggs = Vec::new();
    for (i, a) in q.aggregates.iter().enumerate() {
        let (func, field) = match a {
            Aggregate::Count => ("COUNT(*)", None),
            Aggregate::CountOf(f) => ("COUNT", Some(f)),
            Aggregate::CountDistinct(f) => ("COUNT(DISTINCT", Some(f)),
            Aggregate::Sum(f) => ("SUM", Some(f)),
            Aggregate::Min(f) => ("MIN", Some(f)),
            Aggregate::Max(f) => ("MAX", Some(f)),
        };
        let expr = match field {
            None => "COUNT(*)".to_string(),
            Some(name) => {
                let f = c.field(name)?;
                let source = match a {
                    Aggregate::CountDistinct(_) => f.identity(),
                    _ => f.column,
                };
                inner.push(format!("{source} AS s{i}"));
                let bigint = if c.postgres { "BIGINT" } else { "INTEGER" };
                match a {
                    // A primary key: nothing repeats (`mlo_pipeline_report`'s deals per week:
                    // 35 ms with DISTINCT on PostgreSQL, against 10 ms for the count).
                    Aggregate::CountDistinct(_) if q.dataset.is_unique(name) => {
                        format!("COUNT(s{i})")
                    }
                    Aggregate::CountDistinct(_) => format!("COUNT(DISTINCT s{i})"),
                    Aggregate::Sum(_) if f.ty == FieldType::Text => {
                        return Err(QueryError::Invalid(format!(
                            "field `{name}` is text; it cannot be summed"
                        )))
                    }
                    Aggregate::Sum(_) => format!("CAST(SUM(s{i}) AS {bigint})"),
                    _ => format!("{func}(s{i})"),
                }
            }
        };
        outs.push(match (a, field.and_then(|n| q.dataset.field(n))) {
            (Aggregate::Count | Aggregate::CountOf(_) | Aggregate::CountDistinct(_), _) => Out::Int,
            (_, Some(f)) => out_of(f.ty),
            (_, None) => Out::Int,
        });
        outer_aggs.push(format!("{expr} AS a{i}"));
    }
    Ok(outer_aggs)
}

/// How PostgreSQL plans `q` for a caller in `scope` ([`Plans`]): with one generic plan per
/// session when the scope is a person's (an Agent's, a referrer's, a ConciergeKey's officers':
/// a few hundred loans through the scope's indexes), the statement reads the loans alone,
/// and nothing else in it can take an index: no filter, and no predicate but ranges and null
/// checks of numbers and instants, which a person's statement keeps off their indexes
/// (`Compiler::filter_column`, `Compiler::personal`). A generic plan prices an Agent at the
/// assistant column's average (3,000 loans), so anything else with an index looks worth
/// intersecting with it: a filter's purposes (215k loans, 38 ms where the statement planned
/// for its values took 0.3 ms), a closing date that is not null when written as is (400k, 35
/// ms). Those statements are planned for their values, as every other caller's are. (A
/// person's history sets have a rule of their own, with the statement written for it:
/// `compile_period_sets`.)
pub(super) fn plans_for(q: &Query, scope: Option<&Scope>) -> Plans {
    let off_indexes = |(name, condition): &(String, Condition)| {
        matches!(
            condition,
            Condition::Lt(_)
                | Condition::Le(_)
                | Condition::Gt(_)
                | Condition::Ge(_)
                | Condition::IsNull
                | Condition::IsNotNull
        ) && q
            .dataset
            .field(name)
            .is_some_and(|f| f.ty != FieldType::Text)
    };
    if scope.is_some_and(Scope::is_personal)
        && q.dataset == Dataset::Loans
        && q.filter.is_none()
        && q.predicates.iter().all(off_indexes)
    {
        Plans::Generic
    } else {
        Plans::PerCall
    }
}
