//! The import's half of schema v15: each person's loans with the loans' period sets
//! (`person_loans`, migration 0016), written again for every loan the import touched (its
//! people, its amount or its sets may have changed), or all of them after a first import.

use super::tables::Stale;
use crate::data::import::tx::Tx;
use crate::data::scope::{ROLE_ASSISTANT, ROLE_OFFICER, ROLE_REFERRER};

/// Loans written again per statement: their keys are the host's own integers, in the text.
const LOANS_PER_STATEMENT: usize = 1000;

impl Tx {
    /// Writes the person rows of the loans `stale` names again: every row of a touched loan
    /// goes (a person who no longer holds a role on it keeps nothing of it), then the rows of
    /// its people as the loan and its sets are now. After a first import (every set or every
    /// loan new) the whole table is written again, its loan index built once at the end.
    pub(super) async fn write_person_loans(&mut self, stale: &Stale) -> Result<(), sqlx::Error> {
        if stale.all || stale.totals_all {
            let creates = self.drop_indexes("person_loans").await?;
            self.exec("DELETE FROM person_loans", &[]).await?;
            let sql = self.person_rows(None);
            self.exec(&sql, &[]).await?;
            for create in creates {
                self.exec(&create, &[]).await?;
            }
            return Ok(());
        }
        let keys: Vec<i64> = stale.loans.iter().copied().collect();
        for chunk in keys.chunks(LOANS_PER_STATEMENT) {
            let list = chunk
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            self.exec(
                &format!("DELETE FROM person_loans WHERE loan_key IN ({list})"),
                &[],
            )
            .await?;
            let sql = self.person_rows(Some(&list));
            self.exec(&sql, &[]).await?;
        }
        Ok(())
    }

    /// The statement that writes the person rows of the loans whose keys `keys` lists (all
    /// loans: `None`), as migration 0016 wrote them: a row per (person, loan) of a loan of
    /// the snapshot with history, its roles the union of the person's, its sets as JSON pairs.
    fn person_rows(&self, keys: Option<&str>) -> String {
        let only = |column: &str| match keys {
            Some(list) => format!(" AND {column} IN ({list})"),
            None => String::new(),
        };
        let (roles, sets) = match self {
            Tx::Sqlite(_) => (
                "SUM(DISTINCT role)",
                "json_group_array(json_array(period_index, status_bits))",
            ),
            Tx::Postgres(_) => (
                "CAST(SUM(DISTINCT role) AS INTEGER)",
                "CAST(json_agg(json_build_array(period_index, status_bits) ORDER BY period_index) AS TEXT)",
            ),
        };
        let people = [
            ("loan_officer_id", ROLE_OFFICER),
            ("loan_assistant_id", ROLE_ASSISTANT),
            ("referring_agent_id", ROLE_REFERRER),
        ]
        .map(|(column, role)| {
            format!(
                "SELECT key, {column} AS person, {role} AS role FROM loans WHERE {column} IS NOT NULL{}",
                only("key")
            )
        })
        .join(" UNION ALL ");
        let sets_of = |table: &str| {
            format!(
                "SELECT loan_key, {sets} AS sets FROM {table} WHERE 1 = 1{} GROUP BY loan_key",
                only("loan_key")
            )
        };
        format!(
            "INSERT INTO person_loans (person_id, loan_key, roles, loan_amount, months, weeks) \
             WITH p AS (SELECT person, key, {roles} AS roles FROM ({people}) x GROUP BY person, key), \
             m AS ({months}), w AS ({weeks}) \
             SELECT p.person, p.key, p.roles, l.loan_amount, m.sets, w.sets \
             FROM p JOIN loans l ON l.key = p.key JOIN m ON m.loan_key = p.key JOIN w ON w.loan_key = p.key \
             ORDER BY p.person, p.key",
            months = sets_of("los_history_months"),
            weeks = sets_of("los_history_weeks"),
        )
    }
}
