//! The platform agent directory: email -> agent id, role codes, company and managed agents.

use sqlx::Row;

use super::store::{Db, DbError};

/// A platform agent as the host needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agent {
    /// Platform user id.
    pub id: String,
    /// Role codes as stored (unknown codes are kept; the caller decides).
    pub roles: Vec<String>,
    /// The agent's company.
    pub company_id: Option<String>,
}

/// The lookup key of an email: case-insensitive for ASCII letters only. Full Unicode case
/// folding would let look-alikes match (the Kelvin sign `K` lower-cases to `k`), so an IdP
/// account `\u{212A}im@x` could sign in as `kim@x`. Likewise only ASCII white space is
/// trimmed: `kim@x\u{2003}` is another account than `kim@x`.
pub fn email_key(email: &str) -> String {
    email.trim_ascii().to_ascii_lowercase()
}

impl Agent {
    /// The caller identity of this agent: its id and its known role codes (unknown codes are
    /// ignored), plus the baseline `User`.
    pub fn identity(&self) -> crate::identity::Identity {
        let roles = self.roles.iter().filter_map(|r| {
            let parsed = crate::identity::RoleCode::parse(r);
            if parsed.is_none() {
                tracing::debug!(agent = %self.id, role = %r, "ignoring unknown role code");
            }
            parsed
        });
        crate::identity::Identity::new(self.id.clone(), roles)
    }
}

impl Db {
    /// The active agent with this email (ASCII case-insensitive), if any.
    pub async fn agent_by_email(&self, email: &str) -> Result<Option<Agent>, DbError> {
        let key = email_key(email);
        let row = match self {
            Db::Sqlite(p) => {
                sqlx::query("SELECT id, company_id FROM agents WHERE email_key = ?1 AND active = 1")
                    .bind(&key)
                    .fetch_optional(p)
                    .await?
                    .map(|r| (r.get::<String, _>(0), r.get::<Option<String>, _>(1)))
            }
            Db::Postgres(p) => {
                sqlx::query("SELECT id, company_id FROM agents WHERE email_key = $1 AND active = 1")
                    .bind(&key)
                    .fetch_optional(p)
                    .await?
                    .map(|r| (r.get::<String, _>(0), r.get::<Option<String>, _>(1)))
            }
        };
        let Some((id, company_id)) = row else {
            return Ok(None);
        };
        let roles: Vec<String> = match self {
            Db::Sqlite(p) => {
                sqlx::query_scalar("SELECT role FROM agent_roles WHERE agent_id = ?1 ORDER BY role")
                    .bind(&id)
                    .fetch_all(p)
                    .await?
            }
            Db::Postgres(p) => {
                sqlx::query_scalar("SELECT role FROM agent_roles WHERE agent_id = $1 ORDER BY role")
                    .bind(&id)
                    .fetch_all(p)
                    .await?
            }
        };
        Ok(Some(Agent {
            id,
            roles,
            company_id,
        }))
    }

    /// Inserts or replaces an agent with its roles and managed agents (used by import, seed
    /// and tests).
    pub async fn upsert_agent(&self, agent: &NewAgent) -> Result<(), DbError> {
        let key = email_key(&agent.email);
        macro_rules! run {
            ($pool:expr, $p:literal) => {{
                let mut tx = $pool.begin().await?;
                sqlx::query(concat!(
                    "INSERT INTO agents (id, email, email_key, first_name, last_name, company_id, active) VALUES (",
                    $p, ") ON CONFLICT (id) DO UPDATE SET email = excluded.email, email_key = excluded.email_key, \
                     first_name = excluded.first_name, last_name = excluded.last_name, company_id = excluded.company_id, \
                     active = excluded.active"
                ))
                .bind(&agent.id)
                .bind(&agent.email)
                .bind(&key)
                .bind(&agent.first_name)
                .bind(&agent.last_name)
                .bind(&agent.company_id)
                .bind(if agent.inactive { 0i64 } else { 1i64 })
                .execute(&mut *tx)
                .await?;
                sqlx::query(if $p.starts_with('?') { "DELETE FROM agent_roles WHERE agent_id = ?1" } else { "DELETE FROM agent_roles WHERE agent_id = $1" })
                    .bind(&agent.id)
                    .execute(&mut *tx)
                    .await?;
                sqlx::query(if $p.starts_with('?') { "DELETE FROM agent_managed WHERE manager_id = ?1" } else { "DELETE FROM agent_managed WHERE manager_id = $1" })
                    .bind(&agent.id)
                    .execute(&mut *tx)
                    .await?;
                for role in &agent.roles {
                    sqlx::query(if $p.starts_with('?') { "INSERT INTO agent_roles (agent_id, role) VALUES (?1, ?2) ON CONFLICT DO NOTHING" } else { "INSERT INTO agent_roles (agent_id, role) VALUES ($1, $2) ON CONFLICT DO NOTHING" })
                        .bind(&agent.id)
                        .bind(role)
                        .execute(&mut *tx)
                        .await?;
                }
                for managed in &agent.managed_agent_ids {
                    sqlx::query(if $p.starts_with('?') { "INSERT INTO agent_managed (manager_id, agent_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING" } else { "INSERT INTO agent_managed (manager_id, agent_id) VALUES ($1, $2) ON CONFLICT DO NOTHING" })
                        .bind(&agent.id)
                        .bind(managed)
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await?;
            }};
        }
        match self {
            Db::Sqlite(p) => run!(p, "?1, ?2, ?3, ?4, ?5, ?6, ?7"),
            Db::Postgres(p) => run!(p, "$1, $2, $3, $4, $5, $6, $7"),
        }
        Ok(())
    }

    /// Recomputes lookup keys written by earlier versions (which folded full Unicode case),
    /// so that only ASCII case is folded. Returns how many keys changed.
    pub async fn refold_email_keys(&self) -> Result<u64, DbError> {
        let rows: Vec<(String, String, String)> = match self {
            Db::Sqlite(p) => {
                sqlx::query_as("SELECT id, email, email_key FROM agents")
                    .fetch_all(p)
                    .await?
            }
            Db::Postgres(p) => {
                sqlx::query_as("SELECT id, email, email_key FROM agents")
                    .fetch_all(p)
                    .await?
            }
        };
        let mut changed = 0;
        for (id, email, key) in rows {
            let folded = email_key(&email);
            if folded == key {
                continue;
            }
            match self {
                Db::Sqlite(p) => {
                    sqlx::query("UPDATE agents SET email_key = ?1 WHERE id = ?2")
                        .bind(&folded)
                        .bind(&id)
                        .execute(p)
                        .await?;
                }
                Db::Postgres(p) => {
                    sqlx::query("UPDATE agents SET email_key = $1 WHERE id = $2")
                        .bind(&folded)
                        .bind(&id)
                        .execute(p)
                        .await?;
                }
            }
            changed += 1;
        }
        Ok(changed)
    }

    /// Every agent's email, names and roles (for the dev IdP's sign-in page).
    pub async fn list_agents(
        &self,
        limit: i64,
    ) -> Result<Vec<(String, String, Vec<String>)>, DbError> {
        let sql_s = "SELECT a.email, COALESCE(a.first_name, '') || ' ' || COALESCE(a.last_name, ''), \
                     COALESCE((SELECT group_concat(role, ',') FROM agent_roles r WHERE r.agent_id = a.id), '') \
                     FROM agents a WHERE a.active = 1 ORDER BY a.email LIMIT ?1";
        let sql_p = "SELECT a.email, COALESCE(a.first_name, '') || ' ' || COALESCE(a.last_name, ''), \
                     COALESCE((SELECT string_agg(role, ',' ORDER BY role) FROM agent_roles r WHERE r.agent_id = a.id), '') \
                     FROM agents a WHERE a.active = 1 ORDER BY a.email LIMIT $1";
        let rows: Vec<(String, String, String)> = match self {
            Db::Sqlite(p) => sqlx::query_as(sql_s).bind(limit).fetch_all(p).await?,
            Db::Postgres(p) => sqlx::query_as(sql_p).bind(limit).fetch_all(p).await?,
        };
        Ok(rows
            .into_iter()
            .map(|(e, n, r)| {
                (
                    e,
                    n.trim().to_string(),
                    r.split(',')
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                        .collect(),
                )
            })
            .collect())
    }
}

/// An agent to write.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NewAgent {
    /// Platform user id (uuid).
    pub id: String,
    /// Email.
    pub email: String,
    /// First name.
    pub first_name: Option<String>,
    /// Last name.
    pub last_name: Option<String>,
    /// Company.
    pub company_id: Option<String>,
    /// Role codes.
    pub roles: Vec<String>,
    /// Agents a ConciergeKey manages.
    pub managed_agent_ids: Vec<String>,
    /// Deactivated: kept, but no longer signs in.
    pub inactive: bool,
}

#[cfg(test)]
mod tests {
    use super::email_key;

    #[test]
    fn the_email_key_folds_and_trims_ascii_only() {
        assert_eq!(email_key(" Kim@Example.COM\t"), "kim@example.com");
        assert_eq!(email_key("\u{212A}im@x"), "\u{212A}im@x");
        for space in ['\u{a0}', '\u{2003}', '\u{3000}'] {
            let padded = format!("{space}kim@x{space}");
            assert_eq!(email_key(&padded), padded, "U+{:04X}", space as u32);
        }
    }
}
