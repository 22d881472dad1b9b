//! The people of the snapshot kept in step (schema v20, migration 0020): the rows of
//! `people_search` and `people_company_search` (what `data::people` reads for an
//! organisation-wide or a company's caller) of every person the loans an import wrote left or
//! took in any part are written again from the totals keyed by each part, once those are
//! counted again; every row when the directory was imported (its names are the rows' names)
//! or a whole snapshot was.

use std::collections::BTreeSet;

use super::tables::{KeyValue, Stale, BATCH_PARAMS, V};
use super::tx::Tx;
use crate::data::people::Part;
use crate::data::totals::TOTALS;

/// The statement writing the people of the snapshot (`company`: per company) whose id is one of
/// `ids` placeholders (each part's branch binds them again), or every person when `ids` is 0.
fn people_insert(company: bool, ids: usize) -> String {
    let (table, company_column, group) = match company {
        true => ("people_company_search", "company_id, ", "company_id, id"),
        false => ("people_search", "", "id"),
    };
    let branches: Vec<String> = Part::ALL
        .iter()
        .map(|part| {
            let (id, name) = part.columns();
            let (org, per_company) = part.totals();
            let source = if company { per_company } else { org };
            let mut condition = format!("{id} IS NOT NULL");
            if company {
                condition.push_str(" AND company_id IS NOT NULL");
            }
            if ids > 0 {
                condition.push_str(&format!(" AND {id} IN ({})", vec!["?"; ids].join(", ")));
            }
            format!(
                "SELECT {company_column}{id} AS id, {} AS name, {} AS part FROM {source} WHERE {condition}",
                name.unwrap_or("CAST(NULL AS TEXT)"),
                part.bit()
            )
        })
        .collect();
    format!(
        "INSERT INTO {table} ({company_column}id, parts, name, name_lower) \
         SELECT {company_column}id, parts, name, LOWER(COALESCE(name, '')) FROM (\
         SELECT {}g.id AS id, g.parts AS parts, {} AS name FROM (\
         SELECT {company_column}id, CAST(SUM(DISTINCT part) AS BIGINT) AS parts, MAX(name) AS loan_name \
         FROM ({}) c GROUP BY {group}) g LEFT JOIN agents a ON a.id = g.id) x",
        if company { "g.company_id AS company_id, " } else { "" },
        crate::data::people::DIRECTORY_NAME,
        branches.join(" UNION ALL ")
    )
}

impl Tx {
    /// Writes again the people rows of every person `stale` notes in a part's totals (every
    /// row when `stale.people_all` or `stale.totals_all`).
    pub(super) async fn write_people(&mut self, stale: &Stale) -> Result<(), sqlx::Error> {
        if stale.people_all || stale.totals_all {
            for table in ["people_search", "people_company_search"] {
                self.exec(&format!("DELETE FROM {table}"), &[]).await?;
            }
            for company in [false, true] {
                self.exec(&people_insert(company, 0), &[]).await?;
            }
            return Ok(());
        }
        let mut ids = BTreeSet::new();
        for part in Part::ALL {
            let (org, _) = part.totals();
            let at = TOTALS
                .iter()
                .position(|t| t.table == org)
                .expect("every part's totals are counted");
            ids.extend(stale.totals[at].iter().filter_map(|v| match v {
                KeyValue::T(Some(id)) => Some(id.clone()),
                _ => None,
            }));
        }
        let ids: Vec<String> = ids.into_iter().collect();
        for chunk in ids.chunks(BATCH_PARAMS / Part::ALL.len()) {
            let values: Vec<V> = chunk.iter().map(|id| V::T(Some(id.clone()))).collect();
            let list = vec!["?"; chunk.len()].join(", ");
            for table in ["people_search", "people_company_search"] {
                self.exec(
                    &format!("DELETE FROM {table} WHERE id IN ({list})"),
                    &values,
                )
                .await?;
            }
            let each_part: Vec<V> = (0..Part::ALL.len())
                .flat_map(|_| values.iter().cloned())
                .collect();
            for company in [false, true] {
                self.exec(&people_insert(company, chunk.len()), &each_part)
                    .await?;
            }
        }
        Ok(())
    }
}
