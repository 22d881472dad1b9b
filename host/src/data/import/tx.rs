//! The import's transaction on either engine (`Tx`): the statements it runs, the indexes a
//! first import drops and builds again, and the period sets it keeps in step with the history.

use std::collections::{BTreeMap, HashMap};

use sqlx::{Postgres, Sqlite, Transaction};

use super::tables::SetRow;
use super::tables::Stale;
use super::tables::BATCH_PARAMS;
use super::tables::HISTORY_SETS;
use super::tables::PERIODS;
use super::tables::STATUS_COUNTS;
use super::tables::V;
use super::tables::WAREHOUSE;
use crate::data::history_keys;
use crate::data::history_keys::{STATUS_BITS, UNLISTED_BIT};
use crate::data::store::number_placeholders;

/// The import's transaction on either engine.
pub(super) enum Tx {
    Sqlite(Transaction<'static, Sqlite>),
    Postgres(Transaction<'static, Postgres>),
}

impl Tx {
    pub(super) async fn exec(&mut self, sql: &str, values: &[V]) -> Result<(), sqlx::Error> {
        macro_rules! run {
            ($tx:expr, $sql:expr) => {{
                let mut q = sqlx::query($sql);
                for v in values {
                    q = match v {
                        V::T(s) => q.bind(s.clone()),
                        V::I(i) => q.bind(*i),
                    };
                }
                q.execute(&mut **$tx).await.map(|_| ())
            }};
        }
        match self {
            Tx::Sqlite(tx) => run!(tx, sql),
            Tx::Postgres(tx) => {
                let numbered = number_placeholders(sql);
                run!(tx, numbered.as_str())
            }
        }
    }

    /// `INSERT INTO table (cols) VALUES (…),(…) <tail>` in batches.
    pub(super) async fn insert_rows(
        &mut self,
        table: &str,
        cols: &[&str],
        tail: &str,
        rows: &[Vec<V>],
    ) -> Result<(), sqlx::Error> {
        let per = (BATCH_PARAMS / cols.len()).max(1);
        let one = format!("({})", vec!["?"; cols.len()].join(", "));
        for chunk in rows.chunks(per) {
            let sql = format!(
                "INSERT INTO {table} ({}) VALUES {} {tail}",
                cols.join(", "),
                vec![one.as_str(); chunk.len()].join(", ")
            );
            let values: Vec<V> = chunk.iter().flatten().cloned().collect();
            self.exec(&sql, &values).await?;
        }
        Ok(())
    }

    /// Rows of a statement with `?` placeholders, on either engine.
    pub(super) async fn fetch<T>(&mut self, sql: &str, values: &[V]) -> Result<Vec<T>, sqlx::Error>
    where
        T: for<'r> sqlx::FromRow<'r, sqlx::sqlite::SqliteRow>
            + for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow>
            + Send
            + Unpin,
    {
        macro_rules! run {
            ($tx:expr, $sql:expr) => {{
                let mut q = sqlx::query_as::<_, T>($sql);
                for v in values {
                    q = match v {
                        V::T(s) => q.bind(s.clone()),
                        V::I(i) => q.bind(*i),
                    };
                }
                q.fetch_all(&mut **$tx).await
            }};
        }
        match self {
            Tx::Sqlite(tx) => run!(tx, sql),
            Tx::Postgres(tx) => {
                let numbered = number_placeholders(sql);
                run!(tx, numbered.as_str())
            }
        }
    }

    /// The integer key of every loan id in `ids` (`loan_keys`), giving new ids their key.
    pub(super) async fn loan_keys(
        &mut self,
        ids: &[String],
    ) -> Result<HashMap<String, i64>, sqlx::Error> {
        let mut unique: Vec<&String> = ids.iter().collect();
        unique.sort();
        unique.dedup();
        let mut keys = HashMap::with_capacity(unique.len());
        for chunk in unique.chunks(BATCH_PARAMS) {
            let marks = vec!["?"; chunk.len()].join(", ");
            let values: Vec<V> = chunk.iter().map(|id| V::T(Some((*id).clone()))).collect();
            let insert = format!(
                "INSERT INTO loan_keys (id) VALUES {} ON CONFLICT (id) DO NOTHING RETURNING id, key",
                vec!["(?)"; chunk.len()].join(", ")
            );
            let new = self.fetch::<(String, i64)>(&insert, &values).await?;
            let all_new = new.len() == chunk.len();
            keys.extend(new);
            if !all_new {
                // Ids the platform had mentioned before keep their key.
                let select = format!("SELECT id, key FROM loan_keys WHERE id IN ({marks})");
                keys.extend(self.fetch::<(String, i64)>(&select, &values).await?);
            }
        }
        Ok(keys)
    }

    /// The snapshot's amount of each loan in `keys` that is in the snapshot.
    pub(super) async fn snapshot_amounts(
        &mut self,
        keys: &[i64],
    ) -> Result<HashMap<i64, Option<i64>>, sqlx::Error> {
        let mut unique = keys.to_vec();
        unique.sort_unstable();
        unique.dedup();
        let mut amounts = HashMap::with_capacity(unique.len());
        for chunk in unique.chunks(BATCH_PARAMS) {
            let select = format!(
                "SELECT key, loan_amount FROM loans WHERE key IN ({})",
                vec!["?"; chunk.len()].join(", ")
            );
            let values: Vec<V> = chunk.iter().map(|k| V::I(Some(*k))).collect();
            amounts.extend(self.fetch::<(i64, Option<i64>)>(&select, &values).await?);
        }
        Ok(amounts)
    }

    /// Copies the current amount of each loan in `keys` onto its history rows and marks them
    /// as in the snapshot (history rows carry what an organisation-wide report needs); the
    /// periods of their sets become `stale`.
    pub(super) async fn sync_history(
        &mut self,
        keys: &[i64],
        stale: &mut Stale,
    ) -> Result<(), sqlx::Error> {
        for chunk in keys.chunks(BATCH_PARAMS) {
            let sql = format!(
                "UPDATE los_status_history SET in_snapshot = 1, \
                 loan_amount = (SELECT l.loan_amount FROM loans l WHERE l.key = los_status_history.loan_key) \
                 WHERE loan_key IN ({})",
                vec!["?"; chunk.len()].join(", ")
            );
            let values: Vec<V> = chunk.iter().map(|k| V::I(Some(*k))).collect();
            self.exec(&sql, &values).await?;
            for (i, (table, _, _)) in HISTORY_SETS.iter().enumerate() {
                let marks = vec!["?"; chunk.len()].join(", ");
                let sql = format!(
                    "UPDATE {table} SET in_snapshot = 1, \
                     loan_amount = (SELECT l.loan_amount FROM loans l WHERE l.key = {table}.loan_key) \
                     WHERE loan_key IN ({marks})"
                );
                self.exec(&sql, &values).await?;
                if !stale.all {
                    let periods = format!(
                        "SELECT DISTINCT CAST(period_index AS BIGINT) FROM {table} WHERE loan_key IN ({marks})"
                    );
                    let found = self.fetch::<(i64,)>(&periods, &values).await?;
                    stale.periods[i].extend(found.into_iter().map(|(p,)| p));
                }
            }
        }
        Ok(())
    }

    /// Adds history rows to the period sets (`los_history_months`, `los_history_weeks`). A
    /// (period, loan) already there gains the new bits; rows written twice change nothing.
    pub(super) async fn add_to_history_sets(&mut self, rows: &[SetRow]) -> Result<(), sqlx::Error> {
        for (i, (table, _, _)) in HISTORY_SETS.iter().enumerate() {
            // In key order, as the table is clustered.
            let mut sets: BTreeMap<(i64, i64), (i64, Option<i64>, i64)> = BTreeMap::new();
            for r in rows {
                sets.entry((r.periods[i], r.loan_key))
                    .or_insert((0, r.amount, r.in_snapshot))
                    .0 |= r.bit;
            }
            let sets: Vec<Vec<V>> = sets
                .into_iter()
                .map(|((period, key), (bits, amount, in_snapshot))| {
                    vec![
                        V::I(Some(period)),
                        V::I(Some(key)),
                        V::I(Some(bits)),
                        V::I(amount),
                        V::I(Some(in_snapshot)),
                    ]
                })
                .collect();
            let tail = format!(
                "ON CONFLICT (period_index, loan_key) DO UPDATE SET status_bits = {table}.status_bits | excluded.status_bits"
            );
            self.insert_rows(
                table,
                &[
                    "period_index",
                    "loan_key",
                    "status_bits",
                    "loan_amount",
                    "in_snapshot",
                ],
                &tail,
                &sets,
            )
            .await?;
        }
        Ok(())
    }

    /// Builds the period sets from the whole history in one statement each (after a first
    /// import into an empty history table).
    pub(super) async fn build_history_sets(&mut self) -> Result<(), sqlx::Error> {
        // The union of single bits: SQLite has no `bit_or`; the sum of the distinct bits is
        // the same number.
        let union = match self {
            Tx::Sqlite(_) => "SUM(DISTINCT status_bit)",
            Tx::Postgres(_) => "bit_or(status_bit)",
        };
        for (table, period, _) in HISTORY_SETS {
            self.exec(&format!("DELETE FROM {table}"), &[]).await?;
            let sql = format!(
                "INSERT INTO {table} (period_index, loan_key, status_bits, loan_amount, in_snapshot) \
                 SELECT {period}, loan_key, {union}, MAX(loan_amount), MAX(in_snapshot) \
                 FROM los_status_history GROUP BY {period}, loan_key ORDER BY 1, 2"
            );
            self.exec(&sql, &[]).await?;
            self.analyze(table).await?;
        }
        Ok(())
    }

    /// Counts the `stale` periods' sets again (migration 0008): the loans in the snapshot per
    /// (period, set of bits), and what the sets carry of them; then per (period, status text)
    /// (migration 0014).
    pub(super) async fn count_sets(&mut self, stale: &Stale) -> Result<(), sqlx::Error> {
        for i in 0..HISTORY_SETS.len() {
            if stale.all {
                self.count_periods(i, None).await?;
                continue;
            }
            let periods: Vec<i64> = stale.periods[i].iter().copied().collect();
            // The statuses' texts and bits are bound too.
            for chunk in periods.chunks(BATCH_PARAMS - 2 * STATUS_BITS.len()) {
                self.count_periods(i, Some(chunk)).await?;
            }
        }
        Ok(())
    }

    /// Counts the sets of `HISTORY_SETS[i]` again in `periods` (every period: `None`), then
    /// the statuses of those periods: a listed status (`STATUS_BITS`) from the sets just
    /// counted that hold its bit; one without a bit of its own from its history rows (the
    /// unlisted bit's) with their sets, each loan once per (period, status).
    async fn count_periods(
        &mut self,
        i: usize,
        periods: Option<&[i64]>,
    ) -> Result<(), sqlx::Error> {
        let (table, period, counts) = HISTORY_SETS[i];
        let statuses = STATUS_COUNTS[i];
        let values: Vec<V> = periods
            .unwrap_or_default()
            .iter()
            .map(|p| V::I(Some(*p)))
            .collect();
        let only = |column: &str| match periods {
            Some(p) => format!(" AND {column} IN ({})", vec!["?"; p.len()].join(", ")),
            None => String::new(),
        };
        let columns =
            "period_index, status_bits, loans, amounts, amount_sum, amount_min, amount_max";
        for counted in [counts, statuses] {
            let sql = format!("DELETE FROM {counted} WHERE 1 = 1{}", only("period_index"));
            self.exec(&sql, &values).await?;
        }
        let sql = format!(
            "INSERT INTO {counts} ({columns}) \
             SELECT period_index, status_bits, COUNT(*), COUNT(loan_amount), SUM(loan_amount), \
             MIN(loan_amount), MAX(loan_amount) FROM {table} \
             WHERE in_snapshot = 1{} GROUP BY period_index, status_bits",
            only("period_index")
        );
        self.exec(&sql, &values).await?;
        let columns = columns.replace("status_bits", "status");
        let mut listed: Vec<V> = STATUS_BITS
            .iter()
            .flat_map(|s| [V::T(Some(s.to_string())), V::I(history_keys::listed_bit(s))])
            .collect();
        listed.extend(values.iter().cloned());
        let sql = format!(
            "WITH b (status, bit) AS (VALUES {}) \
             INSERT INTO {statuses} ({columns}) \
             SELECT c.period_index, b.status, SUM(c.loans), SUM(c.amounts), SUM(c.amount_sum), \
             MIN(c.amount_min), MAX(c.amount_max) FROM {counts} c JOIN b ON (c.status_bits & b.bit) <> 0 \
             WHERE 1 = 1{} GROUP BY c.period_index, b.status",
            vec!["(?, ?)"; STATUS_BITS.len()].join(", "),
            only("c.period_index")
        );
        self.exec(&sql, &listed).await?;
        // The history rows with the unlisted bit by their partial index (migration 0014), then
        // each one's set by its key. Read from the sets' side, PostgreSQL priced
        // `(status_bits & bit) <> 0` at most sets and scanned them (0.4-0.6 s a unit at 1M
        // loans, for no row); SQLite, given the periods, read their every set first (0.56 s
        // for two months) unless told the order (`CROSS JOIN`).
        let join = match self {
            Tx::Sqlite(_) => "CROSS JOIN",
            Tx::Postgres(_) => "JOIN",
        };
        let sql = format!(
            "INSERT INTO {statuses} ({columns}) \
             SELECT d.pi, d.st, COUNT(*), COUNT(d.amount), SUM(d.amount), MIN(d.amount), MAX(d.amount) \
             FROM (SELECT DISTINCT r.period_index AS pi, h.status AS st, r.loan_key AS lk, r.loan_amount AS amount \
             FROM los_status_history h {join} {table} r ON r.period_index = h.{period} AND r.loan_key = h.loan_key \
             WHERE h.status_bit = {UNLISTED_BIT} AND r.in_snapshot = 1{}) d GROUP BY d.pi, d.st",
            only(&format!("h.{period}"))
        );
        self.exec(&sql, &values).await
    }

    /// Counts again the rows per key of each warehouse period `stale` holds (migrations 0009
    /// and 0011), from the period's rows (by their instant's index).
    pub(super) async fn count_warehouse(&mut self, stale: &Stale) -> Result<(), sqlx::Error> {
        for (dataset, stale) in WAREHOUSE.iter().zip(&stale.warehouse) {
            let w = dataset
                .warehouse_counts()
                .expect("the warehouse datasets have counts");
            // A row per counted value (a deal is its id) is counted as rows.
            let counted = if dataset.is_unique(w.counted) {
                "COUNT(*)".to_string()
            } else {
                format!("COUNT(DISTINCT {})", w.row_counted)
            };
            for ((counts, (_, start)), periods) in
                [w.months, w.weeks].iter().zip(PERIODS).zip(stale)
            {
                for period in periods {
                    let (from, to) = (start(*period), start(*period + 1));
                    self.exec(
                        &format!("DELETE FROM {counts} WHERE period_index = ?"),
                        &[V::I(Some(*period))],
                    )
                    .await?;
                    self.exec(
                        &format!(
                            "INSERT INTO {counts} (period_index, {key}, {count}) \
                             SELECT CAST(? AS INTEGER), {key}, {counted} FROM {rows} \
                             WHERE {at} >= ? AND {at} < ? GROUP BY {key}",
                            key = w.row_key,
                            count = w.count,
                            rows = w.rows,
                            at = w.row_instant,
                        ),
                        &[V::I(Some(*period)), V::I(Some(from)), V::I(Some(to))],
                    )
                    .await?;
                }
            }
        }
        Ok(())
    }

    /// The creation instants of the deals among `ids` the warehouse holds (before they are
    /// written again).
    pub(super) async fn deal_instants(&mut self, ids: &[V]) -> Result<Vec<i64>, sqlx::Error> {
        let mut out = Vec::new();
        for chunk in ids.chunks(BATCH_PARAMS) {
            let marks = vec!["?"; chunk.len()].join(", ");
            let sql = format!("SELECT created_at FROM dw_deals WHERE id IN ({marks})");
            out.extend(
                self.fetch::<(i64,)>(&sql, chunk)
                    .await?
                    .into_iter()
                    .map(|(at,)| at),
            );
        }
        Ok(out)
    }

    /// Whether `table` has no row (in this transaction).
    pub(super) async fn is_empty(&mut self, table: &str) -> Result<bool, sqlx::Error> {
        let sql = format!("SELECT NOT EXISTS (SELECT 1 FROM {table})");
        Ok(self.fetch::<(bool,)>(&sql, &[]).await?[0].0)
    }

    /// Gives PostgreSQL statistics for `table`, filled in bulk by this transaction: autovacuum
    /// cannot see uncommitted rows, and the statements the import runs next (sets, counts,
    /// totals, `person_loans`) would be planned as if the table were empty (nested loops over a
    /// million loans: a 1M-loan first import spent over 20 minutes on `person_loans` alone).
    /// `ANALYZE` reads this transaction's rows. SQLite plans without statistics: nothing.
    pub(super) async fn analyze(&mut self, table: &str) -> Result<(), sqlx::Error> {
        match self {
            Tx::Sqlite(_) => Ok(()),
            Tx::Postgres(_) => self.exec(&format!("ANALYZE {table}"), &[]).await,
        }
    }

    /// Drops the secondary indexes of `table` (not the ones behind its primary key or unique
    /// constraints) and returns the statements that create them again, as the schema has them.
    pub(super) async fn drop_indexes(&mut self, table: &str) -> Result<Vec<String>, sqlx::Error> {
        let sql = match self {
            // `sql` is NULL for the indexes SQLite makes for keys and UNIQUE columns.
            Tx::Sqlite(_) => {
                "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL"
            }
            Tx::Postgres(_) => {
                "SELECT i.indexname::text, i.indexdef FROM pg_indexes i \
                 WHERE i.schemaname = current_schema() AND i.tablename = ? \
                 AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)"
            }
        };
        let indexes = self
            .fetch::<(String, String)>(sql, &[V::T(Some(table.to_string()))])
            .await?;
        let mut creates = Vec::with_capacity(indexes.len());
        for (name, create) in indexes {
            self.exec(&format!("DROP INDEX {name}"), &[]).await?;
            creates.push(create);
        }
        Ok(creates)
    }

    pub(super) async fn commit(self) -> Result<(), sqlx::Error> {
        match self {
            Tx::Sqlite(tx) => tx.commit().await,
            Tx::Postgres(tx) => tx.commit().await,
        }
    }
}
