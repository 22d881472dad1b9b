//! Caller scope for the caller-scoped datasets, resolved from the database on every request
//! from the caller's role codes (docs/design.md §5): the union over the roles held, compiled into a
//! SQL predicate over the loan alias `l` that the query compiler always ANDs in.

use super::store::{Db, DbError};
use crate::identity::{Identity, RoleCode};

/// What the caller may see.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Scope {
    /// Admin: every loan.
    pub all: bool,
    /// Processor: loans of this company.
    pub company: Option<String>,
    /// ConciergeKey: loans of these officers.
    pub managed_officers: Vec<String>,
    /// Agent / DualLicensedAgent: loans the caller originates, assists or referred.
    pub originated_by: Option<String>,
    /// PreLicensed: loans the caller referred (replaces the Agent rule).
    pub referred_by: Option<String>,
}

/// A person's role on a loan, as `person_loans.roles` holds it (schema v15): its loan officer.
pub const ROLE_OFFICER: i64 = 1;
/// A person's role on a loan: its loan assistant.
pub const ROLE_ASSISTANT: i64 = 2;
/// A person's role on a loan: its referring agent.
pub const ROLE_REFERRER: i64 = 4;

impl Scope {
    /// Resolves the scope of `caller` from the agent directory.
    pub async fn resolve(db: &Db, caller: &Identity) -> Result<Scope, DbError> {
        let mut scope = Scope::default();
        if caller.has(RoleCode::Admin) {
            scope.all = true;
            return Ok(scope);
        }
        let me = caller.user_id.clone();
        // Resolved with the identity on this request (the agent directory), or read now.
        let facts = caller.scope_facts.as_deref();
        if caller.has(RoleCode::Processor) {
            scope.company = match facts {
                Some(f) => f.company_id.clone(),
                None => db.agent_company(&me).await?,
            };
        }
        if caller.has(RoleCode::ConciergeKey) {
            scope.managed_officers = match facts {
                Some(f) => f.managed_agent_ids.clone(),
                None => db.managed_agents(&me).await?,
            };
        }
        if caller.has(RoleCode::PreLicensed) {
            scope.referred_by = Some(me);
        } else if caller.has_any(&[RoleCode::Agent, RoleCode::DualLicensedAgent]) {
            scope.originated_by = Some(me);
        }
        Ok(scope)
    }

    /// The scope of the spec's per-loan tools (`get_loan_application`, its contacts and task
    /// tools, `search_loan_applications`): every loan for Admin and for Processor ("all loans
    /// org-wide, like Admin"); a CompanyAdmin's company ("the company-bounded loan path"); for
    /// every other role the reporting scope, and the union of what the roles held give.
    pub async fn resolve_per_loan(db: &Db, caller: &Identity) -> Result<Scope, DbError> {
        if caller.has_any(&[RoleCode::Admin, RoleCode::Processor]) {
            return Ok(Scope {
                all: true,
                ..Scope::default()
            });
        }
        let mut scope = Scope::resolve(db, caller).await?;
        if caller.has(RoleCode::CompanyAdmin) {
            scope.company = match caller.scope_facts.as_deref() {
                Some(f) => f.company_id.clone(),
                None => db.agent_company(&caller.user_id).await?,
            };
        }
        Ok(scope)
    }

    /// The loan column the scope's index holds in order after the scope's one equality, for
    /// a scope of a single company (`loans_company (company_id, status)`); `None` for any
    /// other scope (an organisation has no equality, an Agent's is an `OR` of three).
    pub fn ordered_by(&self) -> Option<&'static str> {
        self.only_company().then_some("l.status")
    }

    /// Whether the scope is one company's loans and nothing else (a Processor's): one
    /// equality on `company_id`, which `loans_company` and `loans_company_status_months` lead.
    pub fn only_company(&self) -> bool {
        !self.all
            && self.company.is_some()
            && self.managed_officers.is_empty()
            && self.originated_by.is_none()
            && self.referred_by.is_none()
    }

    /// Whether the scope is a person's loans (an Agent's, a referrer's, a ConciergeKey's
    /// officers'): neither the organisation nor a company, a few hundred loans at most.
    pub fn is_personal(&self) -> bool {
        !self.all && self.company.is_none()
    }

    /// The predicate (SQL with `?` placeholders, over alias `l`) and its parameters. A scope
    /// that grants nothing is `1 = 0`.
    pub fn predicate(&self) -> (String, Vec<String>) {
        if self.all {
            return ("1 = 1".into(), vec![]);
        }
        let mut parts = Vec::new();
        let mut params = Vec::new();
        if let Some(company) = &self.company {
            parts.push("l.company_id = ?".to_string());
            params.push(company.clone());
        }
        if !self.managed_officers.is_empty() {
            parts.push(format!(
                "l.loan_officer_id IN ({})",
                vec!["?"; self.managed_officers.len()].join(", ")
            ));
            params.extend(self.managed_officers.iter().cloned());
        }
        if let Some(me) = &self.originated_by {
            parts.push(
                "(l.loan_officer_id = ? OR l.loan_assistant_id = ? OR l.referring_agent_id = ?)"
                    .into(),
            );
            params.extend([me.clone(), me.clone(), me.clone()]);
        }
        if let Some(me) = &self.referred_by {
            parts.push("l.referring_agent_id = ?".into());
            params.push(me.clone());
        }
        if parts.is_empty() {
            return ("1 = 0".into(), vec![]);
        }
        (format!("({})", parts.join(" OR ")), params)
    }

    /// For a personal scope ([`Scope::is_personal`]), the same loans as [`Scope::predicate`]
    /// as a condition over a person's loan rows (alias `p` of `person_loans`, schema v15),
    /// with its parameters: each part of the union is the person and the roles that part
    /// grants. A loan two parts reach has a row for each person: the reader keeps one.
    /// `None` for any other scope (the organisation's, a company's: no person names them).
    pub fn person_predicate(&self) -> Option<(String, Vec<String>)> {
        if !self.is_personal() {
            return None;
        }
        let mut parts = Vec::new();
        let mut params = Vec::new();
        if !self.managed_officers.is_empty() {
            parts.push(format!(
                "(p.person_id IN ({}) AND (p.roles & {ROLE_OFFICER}) <> 0)",
                vec!["?"; self.managed_officers.len()].join(", ")
            ));
            params.extend(self.managed_officers.iter().cloned());
        }
        if let Some(me) = &self.originated_by {
            // Officer, assistant or referrer: every role a row can hold.
            parts.push("p.person_id = ?".to_string());
            params.push(me.clone());
        }
        if let Some(me) = &self.referred_by {
            parts.push(format!(
                "(p.person_id = ? AND (p.roles & {ROLE_REFERRER}) <> 0)"
            ));
            params.push(me.clone());
        }
        if parts.is_empty() {
            return Some(("1 = 0".into(), vec![]));
        }
        Some((format!("({})", parts.join(" OR ")), params))
    }
}

impl Db {
    /// The agent's company.
    pub async fn agent_company(&self, id: &str) -> Result<Option<String>, DbError> {
        let sql = "SELECT company_id FROM agents WHERE id = ?";
        let v: Option<Option<String>> = match self {
            Db::Sqlite(p) => sqlx::query_scalar(sql).bind(id).fetch_optional(p).await?,
            Db::Postgres(p) => {
                sqlx::query_scalar(&sql.replace('?', "$1"))
                    .bind(id)
                    .fetch_optional(p)
                    .await?
            }
        };
        Ok(v.flatten())
    }

    /// The agents a ConciergeKey manages.
    pub async fn managed_agents(&self, id: &str) -> Result<Vec<String>, DbError> {
        let sql = "SELECT agent_id FROM agent_managed WHERE manager_id = ? ORDER BY agent_id";
        Ok(match self {
            Db::Sqlite(p) => sqlx::query_scalar(sql).bind(id).fetch_all(p).await?,
            Db::Postgres(p) => {
                sqlx::query_scalar(&sql.replace('?', "$1"))
                    .bind(id)
                    .fetch_all(p)
                    .await?
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predicates_per_rule() {
        assert_eq!(
            Scope {
                all: true,
                ..Default::default()
            }
            .predicate()
            .0,
            "1 = 1"
        );
        assert_eq!(Scope::default().predicate().0, "1 = 0");
        let s = Scope {
            company: Some("c".into()),
            managed_officers: vec!["a".into(), "b".into()],
            originated_by: Some("me".into()),
            ..Default::default()
        };
        let (sql, params) = s.predicate();
        assert_eq!(
            sql,
            "(l.company_id = ? OR l.loan_officer_id IN (?, ?) OR (l.loan_officer_id = ? OR l.loan_assistant_id = ? OR l.referring_agent_id = ?))"
        );
        assert_eq!(params, vec!["c", "a", "b", "me", "me", "me"]);
        let p = Scope {
            referred_by: Some("me".into()),
            ..Default::default()
        }
        .predicate();
        assert_eq!(p.0, "(l.referring_agent_id = ?)");
    }
}
