//! Where the caller's scope enters: every statement's `WHERE` clause is built here, by every
//! planner, and on a caller-scoped dataset it always begins with the scope condition (no scope:
//! no statement); a plugin's filter and predicates can only narrow it. The one plan without a
//! `WHERE` over the loans, the snapshot's totals, is only for a scope of every loan or of one
//! company's loans (`TotalsScope`), and its company's condition is written here too.

use super::columns::P;
use super::compiler::Compiler;
use super::ir::{Query, QueryError};
use crate::data::catalog::Dataset;
use crate::data::scope::Scope;

/// The caller's scope as a condition over the loan alias `l`, with its parameters.
pub(super) fn scope_condition(scope: Option<&Scope>) -> Result<(String, Vec<P>), QueryError> {
    let scope = scope.ok_or_else(|| {
        QueryError::Unavailable("no caller scope for a caller-scoped dataset".into())
    })?;
    let (sql, params) = scope.predicate();
    Ok((sql, params.into_iter().map(P::T).collect()))
}

/// The loans a table of the snapshot's totals counted for the caller's scope, when a scope is
/// one the import counts: every loan (schema v11), or one company's and nothing else (a
/// Processor's, schema v12). Any other scope's rows are the ones this module's `WHERE` keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum TotalsScope {
    /// Every loan: the snapshot's totals.
    Organisation,
    /// One company's loans: its rows of the totals per company.
    Company(String),
}

impl TotalsScope {
    /// The scope of `scope`'s totals, if the import counts one.
    pub(super) fn of(scope: Option<&Scope>) -> Option<TotalsScope> {
        let scope = scope?;
        if scope.all {
            return Some(TotalsScope::Organisation);
        }
        match &scope.company {
            Some(company) if scope.only_company() => Some(TotalsScope::Company(company.clone())),
            _ => None,
        }
    }

    /// The condition on a table of totals' rows (none organisation-wide) with its parameter.
    pub(super) fn condition(&self, params: &mut Vec<P>) -> Option<String> {
        match self {
            TotalsScope::Organisation => None,
            TotalsScope::Company(company) => {
                params.push(P::T(company.clone()));
                Some("company_id = ?".into())
            }
        }
    }
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
