//! Where the caller's scope enters: every statement's `WHERE` clause is built here, by every
//! planner, and on a caller-scoped dataset it always begins with the scope condition (no scope:
//! no statement); a plugin's filter and predicates can only narrow it. The one plan without a
//! `WHERE` over the loans, the snapshot's totals, is only for a scope of every loan
//! (`organisation_wide`).

use super::*;

/// The caller's scope as a condition over the loan alias `l`, with its parameters.
pub(super) fn scope_condition(scope: Option<&Scope>) -> Result<(String, Vec<P>), QueryError> {
    let scope = scope.ok_or_else(|| {
        QueryError::Unavailable("no caller scope for a caller-scoped dataset".into())
    })?;
    let (sql, params) = scope.predicate();
    Ok((sql, params.into_iter().map(P::T).collect()))
}

/// Whether the caller's scope is every loan: the only scope a plan may answer from what the
/// import counted over the whole snapshot (the totals, schema v11) instead of the rows this
/// module's `WHERE` keeps.
pub(super) fn organisation_wide(scope: Option<&Scope>) -> bool {
    scope.is_some_and(|s| s.all)
}

/// The `WHERE` clause (scope, filter, predicates) and its parameters, in that order.
pub(super) fn where_clause(
    c: &mut Compiler,
    q: &Query,
    scope: Option<&Scope>,
    filter_sql: Vec<String>,
    filter_params: Vec<P>,
) -> Result<(String, Vec<P>), QueryError> {
    let mut wheres = Vec::new();
    let mut where_params = Vec::new();
    if c.history_only {
        wheres.push(Dataset::HISTORY_ONLY_WHERE.to_string());
    } else if q.dataset.has_loans() {
        let (sql, params) = scope_condition(scope)?;
        wheres.push(sql);
        where_params.extend(params);
    }
    wheres.extend(filter_sql);
    where_params.extend(filter_params);
    for (field, cond) in &q.predicates {
        wheres.push(c.predicate(field, cond)?);
    }
    where_params.extend(std::mem::take(&mut c.params));
    let where_sql = if wheres.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", wheres.join(" AND "))
    };
    Ok((where_sql, where_params))
}
