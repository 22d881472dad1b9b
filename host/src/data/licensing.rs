//! Licences and indicative prices (schema v19): a user's state licences behind the spec's
//! per-user access check (`get_user_licenses`, the REST path of `GetUserLicensesResponse`), and
//! the rate sheet's prices for a scenario, only for a caller licensed in its property state
//! (`search_pricing`). The check: the caller's own licences; any agent's for Admin; the agents a
//! ConciergeKey manages; no other, and no Processor branch (a Processor reads only their own). A
//! user the caller may not read answers exactly as an unknown one.

use sqlx::Row as _;

use super::store::{number_placeholders, Db, DbError};
use crate::identity::{Identity, RoleCode};

/// One state licence (`UserLicenseInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct License {
    /// The 2-letter state code.
    pub state: String,
    /// The number the state issued.
    pub number: Option<String>,
    /// The year it expires (`YYYY`), when the import gave one.
    pub expiration_year: Option<String>,
}

impl License {
    /// Whether the licence holds in `year`: it names an expiration year of `year` or later (a
    /// licence without one is not taken as current).
    pub fn current_in(&self, year: i32) -> bool {
        self.expiration_year
            .as_deref()
            .and_then(|y| y.parse::<i32>().ok())
            .is_some_and(|y| y >= year)
    }
}

/// Whether `caller` may read `user`'s licences (and price as them: never, but for themselves).
pub async fn may_read(db: &Db, caller: &Identity, user: &str) -> Result<bool, DbError> {
    if user == caller.user_id {
        return Ok(true);
    }
    let allowed = if caller.has(RoleCode::Admin) {
        true
    } else if caller.has(RoleCode::ConciergeKey) {
        let managed = match caller.scope_facts.as_deref() {
            Some(f) => f.managed_agent_ids.clone(),
            None => db.managed_agents(&caller.user_id).await?,
        };
        managed.iter().any(|m| m == user)
    } else {
        false
    };
    Ok(allowed && is_agent(db, user).await?)
}

/// Whether `id` is an agent of the directory.
async fn is_agent(db: &Db, id: &str) -> Result<bool, DbError> {
    let sql = "SELECT COUNT(*) FROM agents WHERE id = ?";
    let n: i64 = match db {
        Db::Sqlite(p) => sqlx::query_scalar(sql).bind(id).fetch_one(p).await?,
        Db::Postgres(p) => {
            sqlx::query_scalar(&number_placeholders(sql))
                .bind(id)
                .fetch_one(p)
                .await?
        }
    };
    Ok(n > 0)
}

/// `user`'s licences, by state.
pub async fn licenses_of(db: &Db, user: &str) -> Result<Vec<License>, DbError> {
    let sql = "SELECT state, license_number, expiration_year FROM user_licenses \
               WHERE user_id = ? ORDER BY state";
    let rows = match db {
        Db::Sqlite(p) => sqlx::query(sql)
            .bind(user)
            .fetch_all(p)
            .await?
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect::<Vec<_>>(),
        Db::Postgres(p) => sqlx::query(&number_placeholders(sql))
            .bind(user)
            .fetch_all(p)
            .await?
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect(),
    };
    Ok(rows
        .into_iter()
        .map(|(state, number, expiration_year)| License {
            state,
            number,
            expiration_year,
        })
        .collect())
}

/// `user`'s licences when `caller` may read them; `None` for an unknown user and for one the
/// caller may not read alike.
pub async fn readable(
    db: &Db,
    caller: &Identity,
    user: &str,
) -> Result<Option<Vec<License>>, DbError> {
    if !may_read(db, caller, user).await? {
        return Ok(None);
    }
    licenses_of(db, user).await.map(Some)
}

#[cfg(test)]
pub(crate) mod tests;
