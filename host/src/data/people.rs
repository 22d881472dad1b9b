//! People: the people on the loans of a caller's scope (officers, assistants, processors,
//! referrers), and the caller, searched by name tokens and by the parts they play
//! (`search_users`, through the `people` capability of `loan:reporting@1.2.0`). An
//! organisation's or a company's people are read from the people tables (schema v20, built
//! from the snapshot's totals keyed by each part; `indexed`), never the loans; a person's scope
//! (an Agent's, a referrer's, a ConciergeKey's officers') from its loans through the scope's
//! indexes. Names are
//! the directory's (the agent's first and last name), else the name the loans give the person;
//! emails are never read.

use super::scope::Scope;
use super::store::{number_placeholders, Db, DbError};

/// People an answer holds at most.
pub const MAX_PEOPLE: u32 = 100;
/// Name tokens a search may hold at most.
pub const MAX_TOKENS: usize = 8;
/// Characters a search's tokens may hold at most, together.
pub const MAX_TOKEN_CHARS: usize = 200;

/// A part a person plays on a loan, as a bit of [`Person::parts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Part {
    /// The loan's officer.
    LoanOfficer,
    /// The loan's assistant.
    LoanAssistant,
    /// The loan's processor.
    Processor,
    /// The loan's referring agent.
    ReferringAgent,
}

impl Part {
    /// Every part, in the order answers list them.
    pub const ALL: [Part; 4] = [
        Part::LoanOfficer,
        Part::LoanAssistant,
        Part::Processor,
        Part::ReferringAgent,
    ];

    /// The part's bit in [`Person::parts`].
    pub const fn bit(self) -> i64 {
        match self {
            Part::LoanOfficer => 1,
            Part::LoanAssistant => 2,
            Part::ReferringAgent => 4,
            Part::Processor => 8,
        }
    }

    /// The parts whose bits `bits` holds, in [`Part::ALL`]'s order.
    pub fn of(bits: i64) -> Vec<Part> {
        Part::ALL
            .into_iter()
            .filter(|p| bits & p.bit() != 0)
            .collect()
    }

    /// The loan columns of the person playing the part, and of the name the loan gives them.
    pub(crate) const fn columns(self) -> (&'static str, Option<&'static str>) {
        match self {
            Part::LoanOfficer => ("loan_officer_id", Some("loan_officer_name")),
            Part::LoanAssistant => ("loan_assistant_id", None),
            Part::Processor => ("processor_id", Some("processor_name")),
            Part::ReferringAgent => ("referring_agent_id", Some("referring_agent_name")),
        }
    }

    /// The totals keyed by the part's person (schema v11, v12, v18): (whole snapshot, per
    /// company).
    pub(crate) const fn totals(self) -> (&'static str, &'static str) {
        match self {
            Part::LoanOfficer => ("loan_totals_officer", "loan_company_totals_officer"),
            Part::LoanAssistant => ("loan_totals_assistant", "loan_company_totals_assistant"),
            Part::Processor => ("loan_totals_processor", "loan_company_totals_processor"),
            Part::ReferringAgent => ("loan_totals_referrer", "loan_company_totals_referrer"),
        }
    }
}

/// A search.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PeopleQuery {
    /// Name tokens, each matched case-insensitively anywhere in the person's name; all must
    /// match. Empty: any name. Only for callers who may read names.
    pub tokens: Vec<String>,
    /// Only people who play one of these parts on a loan of the scope; empty: anyone (the
    /// caller too, who may play none).
    pub parts: Vec<Part>,
    /// People at most, 1 to [`MAX_PEOPLE`].
    pub limit: u32,
}

/// One person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    /// The person's platform user id.
    pub id: String,
    /// Whether the person is the caller.
    pub is_caller: bool,
    /// The parts they play on the loans of the caller's scope ([`Part::bit`]s; the caller may
    /// play none).
    pub parts: i64,
    /// Their name, for callers who may read names.
    pub name: Option<String>,
}

/// A search's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The people: the caller first, then by name (callers who may read names) or by id.
    pub people: Vec<Person>,
    /// How many matched, before the limit.
    pub total: u64,
}

/// Why a search was not run.
#[derive(Debug, thiserror::Error)]
pub enum PeopleError {
    /// The search is malformed (its text says how).
    #[error("{0}")]
    Invalid(String),
    /// The caller may not search this way (its text says why).
    #[error("{0}")]
    Denied(String),
    /// The database failed.
    #[error(transparent)]
    Db(#[from] DbError),
}

impl PeopleQuery {
    /// Refuses a search out of bounds, or by name for a caller who may not read names.
    pub fn check(&self, can_read_names: bool) -> Result<(), PeopleError> {
        if self.limit == 0 || self.limit > MAX_PEOPLE {
            return Err(PeopleError::Invalid(format!(
                "limit: {} is out of range; 1 to {MAX_PEOPLE} people an answer",
                self.limit
            )));
        }
        if self.tokens.len() > MAX_TOKENS {
            return Err(PeopleError::Invalid(format!(
                "name tokens: {} given; at most {MAX_TOKENS}",
                self.tokens.len()
            )));
        }
        let chars: usize = self.tokens.iter().map(|t| t.chars().count()).sum();
        if chars > MAX_TOKEN_CHARS {
            return Err(PeopleError::Invalid(format!(
                "name tokens: {chars} characters; at most {MAX_TOKEN_CHARS}"
            )));
        }
        if let Some(t) = self
            .tokens
            .iter()
            .find(|t| t.is_empty() || t.chars().any(char::is_whitespace))
        {
            return Err(PeopleError::Invalid(format!(
                "name tokens: {t:?} is not one word; split the text on whitespace"
            )));
        }
        if !self.tokens.is_empty() && !can_read_names {
            return Err(PeopleError::Denied(
                "searching people by name needs a role that may read names (Admin, Processor \
                 or ConciergeKey); search by part instead, which gives ids"
                    .into(),
            ));
        }
        Ok(())
    }
}

/// A person's name: the directory's (`agents a`), else the one the loans give them
/// (`g.loan_name`).
pub(crate) const DIRECTORY_NAME: &str =
    "CASE WHEN a.first_name IS NOT NULL OR a.last_name IS NOT NULL \
    THEN TRIM(COALESCE(a.first_name, '') || ' ' || COALESCE(a.last_name, '')) \
    ELSE g.loan_name END";

/// A bound value.
enum Bound {
    Text(String),
    Int(i64),
}

/// Searches the people of `scope` and the caller `me`; names only when `names`.
pub async fn search(
    db: &Db,
    scope: &Scope,
    me: &str,
    q: &PeopleQuery,
    names: bool,
) -> Result<Found, PeopleError> {
    q.check(names)?;
    let postgres = matches!(db, Db::Postgres(_));
    let (sql, params) = match indexed::source(scope) {
        Some(company) => indexed::statement(company, me, q, names, postgres),
        None => statement(scope, me, q, names, postgres),
    };
    let rows = match db {
        Db::Sqlite(p) => bind_all(sqlx::query(&sql), params)
            .fetch_all(p)
            .await
            .map_err(DbError::from)?
            .into_iter()
            .map(|r| row(&r))
            .collect::<Vec<_>>(),
        Db::Postgres(p) => bind_all(sqlx::query(&number_placeholders(&sql)), params)
            .fetch_all(p)
            .await
            .map_err(DbError::from)?
            .into_iter()
            .map(|r| row(&r))
            .collect(),
    };
    let total = rows.first().map_or(0, |(_, total)| *total as u64);
    let people = rows
        .into_iter()
        .map(|(mut p, _)| {
            p.is_caller = p.id == me;
            if !names {
                p.name = None;
            }
            p
        })
        .collect();
    Ok(Found { people, total })
}

/// A row's person and the search's total.
fn row<R: sqlx::Row>(r: &R) -> (Person, i64)
where
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    for<'a> String: sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    for<'a> Option<String>: sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    for<'a> i64: sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    (
        Person {
            id: r.get("id"),
            is_caller: false,
            parts: r.get("parts"),
            name: r.get("name"),
        },
        r.get("total"),
    )
}

fn bind_all<'q, DB: sqlx::Database>(
    mut query: sqlx::query::Query<'q, DB, <DB as sqlx::Database>::Arguments<'q>>,
    params: Vec<Bound>,
) -> sqlx::query::Query<'q, DB, <DB as sqlx::Database>::Arguments<'q>>
where
    String: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    i64: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    for p in params {
        query = match p {
            Bound::Text(t) => query.bind(t),
            Bound::Int(i) => query.bind(i),
        };
    }
    query
}

/// The statement (with `?` placeholders) and its values: the people each source of the scope
/// gives (their id, the name a loan gives them, the part's bit), and the caller with no part;
/// per person the union of their parts and the directory's name, else the loans'; the part
/// and name conditions; the caller first, then by name or id; the limit; the total matched.
fn statement(
    scope: &Scope,
    me: &str,
    q: &PeopleQuery,
    names: bool,
    postgres: bool,
) -> (String, Vec<Bound>) {
    // Text ordered by its bytes on both engines (SQLite's `BINARY`).
    let bytes = if postgres { " COLLATE \"C\"" } else { "" };
    let mut params = Vec::new();
    let mut ctes = Vec::new();
    let mut sources = Vec::new();
    let from_totals = |sources: &mut Vec<String>, company: bool| {
        for part in Part::ALL {
            let (id, name) = part.columns();
            let (org, per_company) = part.totals();
            let (table, extra) = match company {
                true => (per_company, " AND company_id = ?"),
                false => (org, ""),
            };
            sources.push(format!(
                "SELECT {id} AS id, {} AS name, {} AS part FROM {table} \
                 WHERE {id} IS NOT NULL{extra}",
                name.unwrap_or("CAST(NULL AS TEXT)"),
                part.bit()
            ));
        }
    };
    if scope.all {
        from_totals(&mut sources, false);
    } else {
        if let Some(company) = &scope.company {
            from_totals(&mut sources, true);
            params.extend((0..Part::ALL.len()).map(|_| Bound::Text(company.clone())));
        }
        // The scope's person-bound parts (an Agent's, a referrer's, managed officers').
        let personal = Scope {
            company: None,
            ..scope.clone()
        };
        let (predicate, values) = personal.predicate();
        if predicate != "1 = 0" {
            let columns: Vec<String> = Part::ALL
                .iter()
                .flat_map(|p| {
                    let (id, name) = p.columns();
                    std::iter::once(id).chain(name)
                })
                .map(|c| format!("l.{c} AS {c}"))
                .collect();
            // The CTE's values come before the sources' in the text: bind them first.
            let mut cte_params: Vec<Bound> = values.into_iter().map(Bound::Text).collect();
            cte_params.append(&mut params);
            params = cte_params;
            ctes.push(format!(
                "s AS (SELECT {} FROM loans l WHERE {predicate})",
                columns.join(", ")
            ));
            for part in Part::ALL {
                let (id, name) = part.columns();
                sources.push(format!(
                    "SELECT {id} AS id, {} AS name, {} AS part FROM s WHERE {id} IS NOT NULL",
                    name.unwrap_or("CAST(NULL AS TEXT)"),
                    part.bit()
                ));
            }
        }
    }
    sources.push("SELECT CAST(? AS TEXT) AS id, CAST(NULL AS TEXT) AS name, 0 AS part".into());
    params.push(Bound::Text(me.to_string()));
    ctes.push(format!("c AS ({})", sources.join(" UNION ALL ")));
    ctes.push(
        "g AS (SELECT id, CAST(SUM(DISTINCT part) AS BIGINT) AS parts, MAX(name) AS loan_name \
         FROM c GROUP BY id)"
            .into(),
    );
    // Each person's directory name looked up by their id (a few hundred lookups for a
    // person's scope), once per person, rather than joined against the whole directory.
    ctes.push(
        "n AS MATERIALIZED (SELECT g.id AS id, g.parts AS parts, COALESCE((SELECT \
         TRIM(COALESCE(a.first_name, '') || ' ' || COALESCE(a.last_name, '')) FROM agents a \
         WHERE a.id = g.id AND (a.first_name IS NOT NULL OR a.last_name IS NOT NULL)), \
         g.loan_name) AS name FROM g)"
            .into(),
    );
    let name = "n.name";
    let mut conditions = Vec::new();
    if !q.parts.is_empty() {
        let bits = q.parts.iter().fold(0, |bits, p| bits | p.bit());
        conditions.push("(n.parts & ?) <> 0".to_string());
        params.push(Bound::Int(bits));
    }
    for token in &q.tokens {
        let escaped = token
            .to_lowercase()
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_");
        conditions.push(format!("LOWER(COALESCE({name}, '')) LIKE ? ESCAPE '\\'"));
        params.push(Bound::Text(format!("%{escaped}%")));
    }
    let filter = match conditions.is_empty() {
        true => String::new(),
        false => format!(" WHERE {}", conditions.join(" AND ")),
    };
    params.push(Bound::Text(me.to_string()));
    let by_name = match names {
        true => format!("{name}{bytes}, "),
        false => String::new(),
    };
    params.push(Bound::Int(q.limit.into()));
    let sql = format!(
        "WITH {} SELECT n.id AS id, n.parts AS parts, n.name AS name, \
         CAST(COUNT(*) OVER () AS BIGINT) AS total FROM n{filter} \
         ORDER BY CASE WHEN n.id = ? THEN 0 ELSE 1 END, {by_name}n.id{bytes} LIMIT ?",
        ctes.join(", ")
    );
    (sql, params)
}

mod indexed;
#[cfg(test)]
mod tests;
