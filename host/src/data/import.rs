//! `loanhost import <dir>`: the JSON Lines contract of DESIGN.md §5. Files stream line by
//! line; every line is validated (`file:line: reason` on the first bad one); everything runs
//! in one transaction, so a failed import keeps nothing; re-importing is idempotent (upsert by
//! id; history rows dedupe on all their fields).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde_json::{Map, Value};
use sqlx::{Postgres, Sqlite, Transaction};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::agents::email_key;
use super::history_keys;
use super::store::{number_placeholders, Db, DbError};
use super::values::{
    parse_decimal, parse_instant, parse_uuid, LOAN_STATUSES, LOAN_TYPES, PURPOSES,
};

/// The files, in import order.
pub const FILES: [&str; 5] = [
    "agents.jsonl",
    "loans.jsonl",
    "los_status_history.jsonl",
    "dw_loan_milestones.jsonl",
    "dw_deals.jsonl",
];

/// Rows per multi-row statement (kept under both engines' parameter limits).
const BATCH_PARAMS: usize = 30_000;

/// Why an import stopped (nothing of it was kept).
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// A line failed validation.
    #[error("{file}:{line}: {reason}")]
    Line {
        /// File name.
        file: String,
        /// 1-based line number.
        line: u64,
        /// What is wrong, naming the field.
        reason: String,
    },
    /// The folder or a file could not be read.
    #[error("{0}")]
    Io(String),
    /// No known file in the folder.
    #[error("{0}: none of {files} is there", files = FILES.join(", "))]
    NoFiles(String),
    /// The database refused a write.
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<sqlx::Error> for ImportError {
    fn from(e: sqlx::Error) -> Self {
        ImportError::Db(DbError::Query(e))
    }
}

/// Rows imported per file.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ImportReport {
    /// (file, rows read) for each file present, in import order.
    pub files: Vec<(String, u64)>,
}

/// A bound value.
#[derive(Debug, Clone)]
enum V {
    T(Option<String>),
    I(Option<i64>),
}

/// The import's transaction on either engine.
enum Tx {
    Sqlite(Transaction<'static, Sqlite>),
    Postgres(Transaction<'static, Postgres>),
}

impl Tx {
    async fn exec(&mut self, sql: &str, values: &[V]) -> Result<(), sqlx::Error> {
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
    async fn insert_rows(
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
    async fn fetch<T>(&mut self, sql: &str, values: &[V]) -> Result<Vec<T>, sqlx::Error>
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
    async fn loan_keys(&mut self, ids: &[String]) -> Result<HashMap<String, i64>, sqlx::Error> {
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
    async fn snapshot_amounts(
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
    /// as in the snapshot (history rows carry what an organisation-wide report needs).
    async fn sync_history(&mut self, keys: &[i64]) -> Result<(), sqlx::Error> {
        for chunk in keys.chunks(BATCH_PARAMS) {
            let sql = format!(
                "UPDATE los_status_history SET in_snapshot = 1, \
                 loan_amount = (SELECT l.loan_amount FROM loans l WHERE l.key = los_status_history.loan_key) \
                 WHERE loan_key IN ({})",
                vec!["?"; chunk.len()].join(", ")
            );
            let values: Vec<V> = chunk.iter().map(|k| V::I(Some(*k))).collect();
            self.exec(&sql, &values).await?;
            for (table, _) in HISTORY_SETS {
                let sql = format!(
                    "UPDATE {table} SET in_snapshot = 1, \
                     loan_amount = (SELECT l.loan_amount FROM loans l WHERE l.key = {table}.loan_key) \
                     WHERE loan_key IN ({})",
                    vec!["?"; chunk.len()].join(", ")
                );
                self.exec(&sql, &values).await?;
            }
        }
        Ok(())
    }

    /// Adds history rows to the period sets (`los_history_months`, `los_history_weeks`). A
    /// (period, loan) already there gains the new bits; rows written twice change nothing.
    async fn add_to_history_sets(&mut self, rows: &[SetRow]) -> Result<(), sqlx::Error> {
        for (i, (table, _)) in HISTORY_SETS.iter().enumerate() {
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
    async fn build_history_sets(&mut self) -> Result<(), sqlx::Error> {
        // The union of single bits: SQLite has no `bit_or`; the sum of the distinct bits is
        // the same number.
        let union = match self {
            Tx::Sqlite(_) => "SUM(DISTINCT status_bit)",
            Tx::Postgres(_) => "bit_or(status_bit)",
        };
        for (table, period) in HISTORY_SETS {
            self.exec(&format!("DELETE FROM {table}"), &[]).await?;
            let sql = format!(
                "INSERT INTO {table} (period_index, loan_key, status_bits, loan_amount, in_snapshot) \
                 SELECT {period}, loan_key, {union}, MAX(loan_amount), MAX(in_snapshot) \
                 FROM los_status_history GROUP BY {period}, loan_key ORDER BY 1, 2"
            );
            self.exec(&sql, &[]).await?;
        }
        Ok(())
    }

    /// Whether `table` has no row (in this transaction).
    async fn is_empty(&mut self, table: &str) -> Result<bool, sqlx::Error> {
        let sql = format!("SELECT NOT EXISTS (SELECT 1 FROM {table})");
        Ok(self.fetch::<(bool,)>(&sql, &[]).await?[0].0)
    }

    /// Drops the secondary indexes of `table` (not the ones behind its primary key or unique
    /// constraints) and returns the statements that create them again, as the schema has them.
    async fn drop_indexes(&mut self, table: &str) -> Result<Vec<String>, sqlx::Error> {
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

    async fn commit(self) -> Result<(), sqlx::Error> {
        match self {
            Tx::Sqlite(tx) => tx.commit().await,
            Tx::Postgres(tx) => tx.commit().await,
        }
    }
}

/// Imports every known file present in `dir` in one transaction. `progress` is called with
/// (file, rows so far) every 100,000 rows and at the end of each file.
pub async fn import_dir(
    db: &Db,
    dir: &Path,
    mut progress: impl FnMut(&str, u64),
) -> Result<ImportReport, ImportError> {
    if !dir.is_dir() {
        return Err(ImportError::Io(format!(
            "{}: not a directory",
            dir.display()
        )));
    }
    let present: Vec<&str> = FILES
        .iter()
        .copied()
        .filter(|f| dir.join(f).is_file())
        .collect();
    if present.is_empty() {
        return Err(ImportError::NoFiles(dir.display().to_string()));
    }
    let mut tx = match db {
        Db::Sqlite(p) => Tx::Sqlite(p.begin().await?),
        Db::Postgres(p) => {
            let mut tx = p.begin().await?;
            // Index builds at the end of a first import sort in memory (the default, 64 MB,
            // spills a million rows to disk), and a large import is not stopped by the
            // server's default statement timeout.
            sqlx::query("SET LOCAL maintenance_work_mem = '256MB'")
                .execute(&mut *tx)
                .await?;
            sqlx::query("SET LOCAL statement_timeout = 0")
                .execute(&mut *tx)
                .await?;
            Tx::Postgres(tx)
        }
    };
    let mut report = ImportReport::default();
    for file in present {
        // Into an empty table, the secondary indexes are built once at the end of the file
        // (sorted, in one pass) instead of row by row: a first import of a million loans
        // spends most of its time inserting into indexes otherwise. Still one transaction.
        let deferred = match table_of(file) {
            Some(table) if tx.is_empty(table).await? => tx.drop_indexes(table).await?,
            _ => Vec::new(),
        };
        // Loans are written before the history (FILES' order): an empty history now is empty
        // while they are written, and they have no history rows to bring in step. History
        // written into an empty table gets its period sets built once at the end, like the
        // indexes, instead of batch by batch.
        let history_empty = matches!(file, "loans.jsonl" | "los_status_history.jsonl")
            && tx.is_empty("los_status_history").await?;
        let rows =
            import_file(&mut tx, &dir.join(file), file, history_empty, &mut progress).await?;
        for create in deferred {
            tx.exec(&create, &[]).await?;
        }
        if file == "los_status_history.jsonl" && history_empty {
            tx.build_history_sets().await?;
        }
        report.files.push((file.to_string(), rows));
    }
    tx.commit().await?;
    Ok(report)
}

/// The table a file writes its rows to (agents also write their roles and managed agents).
fn table_of(file: &str) -> Option<&'static str> {
    match file {
        "loans.jsonl" => Some("loans"),
        "los_status_history.jsonl" => Some("los_status_history"),
        "dw_loan_milestones.jsonl" => Some("dw_loan_milestones"),
        "dw_deals.jsonl" => Some("dw_deals"),
        _ => None,
    }
}

/// The period sets history rows are summarised in (migration 0005), each with the history
/// column holding its period.
const HISTORY_SETS: [(&str, &str); 2] = [
    ("los_history_months", "month_index"),
    ("los_history_weeks", "week_index"),
];

/// What a history row adds to its period sets.
struct SetRow {
    /// Its period in each of [`HISTORY_SETS`], in that order.
    periods: [i64; 2],
    loan_key: i64,
    bit: i64,
    amount: Option<i64>,
    in_snapshot: i64,
}

/// Rows held before a batch is written.
const FLUSH_ROWS: usize = 5_000;

async fn import_file(
    tx: &mut Tx,
    path: &Path,
    file: &str,
    history_empty: bool,
    progress: &mut impl FnMut(&str, u64),
) -> Result<u64, ImportError> {
    let f = tokio::fs::File::open(path)
        .await
        .map_err(|e| ImportError::Io(format!("{}: {e}", path.display())))?;
    let mut lines = BufReader::with_capacity(1 << 20, f).lines();
    let mut pending: Vec<Record> = Vec::new();
    let (mut line_no, mut rows) = (0u64, 0u64);
    loop {
        let line = lines.next_line().await.map_err(|e| ImportError::Line {
            file: file.into(),
            line: line_no + 1,
            reason: format!("cannot read: {e}"),
        })?;
        let Some(line) = line else { break };
        line_no += 1;
        if line.trim().is_empty() {
            continue;
        }
        let record = parse_line(file, &line).map_err(|reason| ImportError::Line {
            file: file.into(),
            line: line_no,
            reason,
        })?;
        pending.push(record);
        rows += 1;
        if pending.len() >= FLUSH_ROWS {
            write(tx, file, std::mem::take(&mut pending), history_empty).await?;
        }
        if rows % 100_000 == 0 {
            progress(file, rows);
        }
    }
    write(tx, file, pending, history_empty).await?;
    progress(file, rows);
    Ok(rows)
}

/// One validated line.
enum Record {
    Agent {
        row: Vec<V>,
        id: String,
        roles: Vec<String>,
        managed: Vec<String>,
    },
    Row(Vec<V>),
}

fn parse_line(file: &str, line: &str) -> Result<Record, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("not valid JSON: {e}"))?;
    let Value::Object(map) = value else {
        return Err("not a JSON object".into());
    };
    let r = Fields(&map);
    Ok(match file {
        "agents.jsonl" => {
            let id = r.uuid("id")?;
            let email = r.string("email")?;
            if !email.contains('@') {
                return Err(format!("email: `{email}` is not an email address"));
            }
            Record::Agent {
                row: vec![
                    V::T(Some(id.clone())),
                    V::T(Some(email.clone())),
                    V::T(Some(email_key(&email))),
                    V::T(r.opt_string("firstName")?),
                    V::T(r.opt_string("lastName")?),
                    V::T(r.opt_uuid("companyId")?),
                    V::I(Some(r.opt_bool("active")?.unwrap_or(true) as i64)),
                ],
                id,
                roles: r.strings("roles")?,
                managed: r.uuids("managedAgentIds")?,
            }
        }
        "loans.jsonl" => {
            let status = r.string("status")?;
            if !LOAN_STATUSES.contains(&status.as_str()) {
                return Err(format!("status: unknown loan status `{status}`"));
            }
            let loan_type = r.opt_enum("loanType", &LOAN_TYPES)?;
            let purpose = r.opt_enum("purpose", &PURPOSES)?;
            let number = r.opt_string("loanNumber")?;
            let first = r.opt_string("borrowerFirstName")?;
            let last = r.opt_string("borrowerLastName")?;
            let email = r.opt_string("borrowerEmail")?;
            let search = [&number, &first, &last, &email]
                .iter()
                .filter_map(|v| v.as_deref())
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase();
            Record::Row(vec![
                V::T(Some(r.uuid("id")?)),
                V::T(number),
                V::T(first),
                V::T(last),
                V::T(email),
                V::T(Some(search)),
                V::T(Some(status)),
                V::I(r.opt_instant("statusDate")?),
                V::T(loan_type),
                V::T(purpose),
                V::I(r.opt_instant("estimatedClosingDate")?),
                V::I(r.opt_instant("updated")?),
                V::I(r.opt_decimal("loanAmount")?),
                V::I(r.opt_decimal("lockedCompensation")?),
                V::I(r.opt_decimal("estimatedCompensation")?),
                V::T(r.opt_string("propertyState")?.map(|s| s.to_uppercase())),
                V::T(r.opt_uuid("companyId")?),
                V::T(r.opt_uuid("loanOfficerId")?),
                V::T(r.opt_string("loanOfficerName")?),
                V::T(r.opt_uuid("loanAssistantId")?),
                V::T(r.opt_uuid("processorId")?),
                V::T(r.opt_string("processorName")?),
                V::T(r.opt_uuid("referringAgentId")?),
                V::T(r.opt_string("referringAgentName")?),
            ])
        }
        "los_status_history.jsonl" => Record::Row(vec![
            V::T(Some(r.uuid("loanId")?)),
            V::T(Some(r.name("status")?)),
            V::I(Some(r.instant("occurredAt")?)),
        ]),
        "dw_loan_milestones.jsonl" => Record::Row(vec![
            V::T(Some(r.uuid("loanId")?)),
            V::T(Some(r.name("milestone")?)),
            V::I(Some(r.instant("occurredAt")?)),
        ]),
        "dw_deals.jsonl" => Record::Row(vec![
            V::T(Some(r.id_string("id")?)),
            V::I(Some(r.instant("createdAt")?)),
            V::T(Some(r.name("stage")?)),
        ]),
        other => return Err(format!("unknown file {other}")),
    })
}

const LOAN_COLUMNS: [&str; 24] = [
    "id",
    "loan_number",
    "borrower_first_name",
    "borrower_last_name",
    "borrower_email",
    "search_key",
    "status",
    "status_date",
    "loan_type",
    "purpose",
    "estimated_closing_date",
    "updated",
    "loan_amount",
    "locked_compensation",
    "estimated_compensation",
    "property_state",
    "company_id",
    "loan_officer_id",
    "loan_officer_name",
    "loan_assistant_id",
    "processor_id",
    "processor_name",
    "referring_agent_id",
    "referring_agent_name",
];

/// `ON CONFLICT (<first column>) DO UPDATE SET c = excluded.c, …` for every other column.
fn upsert_tail(cols: &[&str]) -> String {
    let sets: Vec<String> = cols
        .iter()
        .skip(1)
        .map(|c| format!("{c} = excluded.{c}"))
        .collect();
    format!(
        "ON CONFLICT ({}) DO UPDATE SET {}",
        cols[0],
        sets.join(", ")
    )
}

/// The first value of each row (the loan id of loans, history and warehouse rows).
fn first_texts(rows: &[Vec<V>]) -> Vec<String> {
    rows.iter()
        .filter_map(|r| match r.first() {
            Some(V::T(Some(id))) => Some(id.clone()),
            _ => None,
        })
        .collect()
}

/// Each row with its loan's key in front (rows start with the loan id), and the keys in row
/// order.
fn with_keys(rows: Vec<Vec<V>>, keys: &HashMap<String, i64>) -> (Vec<Vec<V>>, Vec<i64>) {
    let mut order = Vec::with_capacity(rows.len());
    let rows = rows
        .into_iter()
        .map(|r| {
            let key = match r.first() {
                Some(V::T(Some(id))) => keys[id],
                _ => unreachable!("every row starts with its loan id"),
            };
            order.push(key);
            std::iter::once(V::I(Some(key))).chain(r).collect()
        })
        .collect();
    (rows, order)
}

/// Keeps the last record of each id (PostgreSQL refuses to upsert one row twice in a statement).
fn last_per_id(rows: Vec<Vec<V>>) -> Vec<Vec<V>> {
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut out: Vec<Vec<V>> = Vec::with_capacity(rows.len());
    for row in rows {
        let V::T(Some(id)) = &row[0] else { continue };
        match index.get(id) {
            Some(&i) => out[i] = row,
            None => {
                index.insert(id.clone(), out.len());
                out.push(row);
            }
        }
    }
    out
}

/// Writes a batch of `file`'s records. `history_empty` (the history table was empty when the
/// file began): loans need not bring history rows in step (there are none yet), and history
/// rows reach the period sets when the file is done instead of batch by batch.
async fn write(
    tx: &mut Tx,
    file: &str,
    records: Vec<Record>,
    history_empty: bool,
) -> Result<(), ImportError> {
    if records.is_empty() {
        return Ok(());
    }
    match file {
        "agents.jsonl" => {
            let mut rows = Vec::new();
            let mut roles = Vec::new();
            let mut managed = Vec::new();
            let mut ids = Vec::new();
            // The last line of an agent wins whole: its roles and managed agents replace
            // those of earlier lines, never add to them.
            let mut last_line: HashMap<String, usize> = HashMap::new();
            for (i, r) in records.iter().enumerate() {
                if let Record::Agent { id, .. } = r {
                    last_line.insert(id.clone(), i);
                }
            }
            let records = records
                .into_iter()
                .enumerate()
                .filter(|(i, r)| match r {
                    Record::Agent { id, .. } => last_line.get(id) == Some(i),
                    Record::Row(_) => false,
                })
                .map(|(_, r)| r);
            for r in records {
                if let Record::Agent {
                    row,
                    id,
                    roles: rs,
                    managed: ms,
                } = r
                {
                    rows.push(row);
                    roles.extend(
                        rs.into_iter()
                            .map(|x| vec![V::T(Some(id.clone())), V::T(Some(x))]),
                    );
                    managed.extend(
                        ms.into_iter()
                            .map(|x| vec![V::T(Some(id.clone())), V::T(Some(x))]),
                    );
                    ids.push(id);
                }
            }
            let cols = [
                "id",
                "email",
                "email_key",
                "first_name",
                "last_name",
                "company_id",
                "active",
            ];
            tx.insert_rows("agents", &cols, &upsert_tail(&cols), &last_per_id(rows))
                .await?;
            for chunk in ids.chunks(BATCH_PARAMS) {
                let marks = vec!["?"; chunk.len()].join(", ");
                let values: Vec<V> = chunk.iter().map(|i| V::T(Some(i.clone()))).collect();
                tx.exec(
                    &format!("DELETE FROM agent_roles WHERE agent_id IN ({marks})"),
                    &values,
                )
                .await?;
                tx.exec(
                    &format!("DELETE FROM agent_managed WHERE manager_id IN ({marks})"),
                    &values,
                )
                .await?;
            }
            tx.insert_rows(
                "agent_roles",
                &["agent_id", "role"],
                "ON CONFLICT DO NOTHING",
                &roles,
            )
            .await?;
            tx.insert_rows(
                "agent_managed",
                &["manager_id", "agent_id"],
                "ON CONFLICT DO NOTHING",
                &managed,
            )
            .await?;
        }
        _ => {
            let rows: Vec<Vec<V>> = records
                .into_iter()
                .filter_map(|r| match r {
                    Record::Row(row) => Some(row),
                    Record::Agent { .. } => None,
                })
                .collect();
            match file {
                "loans.jsonl" => {
                    let rows = last_per_id(rows);
                    let keys = tx.loan_keys(&first_texts(&rows)).await?;
                    let (rows, batch_keys) = with_keys(rows, &keys);
                    let mut cols = vec!["key"];
                    cols.extend(LOAN_COLUMNS);
                    tx.insert_rows("loans", &cols, &upsert_tail(&cols), &rows)
                        .await?;
                    if !history_empty {
                        tx.sync_history(&batch_keys).await?;
                    }
                }
                "los_status_history.jsonl" => {
                    let keys = tx.loan_keys(&first_texts(&rows)).await?;
                    let (rows, batch_keys) = with_keys(rows, &keys);
                    let amounts = tx.snapshot_amounts(&batch_keys).await?;
                    // (key, id, status, at) → (key, status, at, amount, in snapshot,
                    // month, week, status bit), and what each row adds to its period sets.
                    let (rows, sets): (Vec<Vec<V>>, Vec<SetRow>) = rows
                        .into_iter()
                        .zip(&batch_keys)
                        .map(|(mut r, key)| {
                            r.remove(1);
                            let (bit, at) = match (&r[1], &r[2]) {
                                (V::T(Some(status)), V::I(Some(at))) => {
                                    (history_keys::status_bit(status), *at)
                                }
                                _ => unreachable!("history rows have a status and an instant"),
                            };
                            let amount = amounts.get(key).copied().flatten();
                            let in_snapshot = i64::from(amounts.contains_key(key));
                            let set = SetRow {
                                periods: [
                                    history_keys::month_index(at),
                                    history_keys::week_index(at),
                                ],
                                loan_key: *key,
                                bit,
                                amount,
                                in_snapshot,
                            };
                            r.push(V::I(amount));
                            r.push(V::I(Some(in_snapshot)));
                            r.push(V::I(Some(set.periods[0])));
                            r.push(V::I(Some(set.periods[1])));
                            r.push(V::I(Some(bit)));
                            (r, set)
                        })
                        .unzip();
                    tx.insert_rows(
                        "los_status_history",
                        &[
                            "loan_key",
                            "status",
                            "occurred_at",
                            "loan_amount",
                            "in_snapshot",
                            "month_index",
                            "week_index",
                            "status_bit",
                        ],
                        "ON CONFLICT DO NOTHING",
                        &rows,
                    )
                    .await?;
                    if !history_empty {
                        tx.add_to_history_sets(&sets).await?;
                    }
                }
                "dw_loan_milestones.jsonl" => {
                    let keys = tx.loan_keys(&first_texts(&rows)).await?;
                    let (rows, _) = with_keys(rows, &keys);
                    let rows: Vec<Vec<V>> = rows
                        .into_iter()
                        .map(|mut r| {
                            r.remove(1);
                            r
                        })
                        .collect();
                    tx.insert_rows(
                        "dw_loan_milestones",
                        &["loan_key", "milestone", "occurred_at"],
                        "ON CONFLICT DO NOTHING",
                        &rows,
                    )
                    .await?
                }
                "dw_deals.jsonl" => {
                    let cols = ["id", "created_at", "stage"];
                    tx.insert_rows("dw_deals", &cols, &upsert_tail(&cols), &last_per_id(rows))
                        .await?
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// A JSON number as an exact decimal. Numbers written by float-based producers may carry
/// representation noise (`2716709.1999999997`); such a number is taken as the 4-place decimal
/// it stands for when it is within 1e-9 of it. Strings are always strict.
fn decimal_number(n: &serde_json::Number) -> Result<i64, String> {
    let text = n.to_string();
    match parse_decimal(&text) {
        Ok(v) => Ok(v),
        Err(e) if e.contains("decimal places") => {
            let x = n.as_f64().ok_or(e.clone())?;
            let scaled = (x * 10_000.0).round();
            if ((scaled / 10_000.0) - x).abs() <= 1e-9 * x.abs().max(1.0) && scaled.abs() < 1e16 {
                Ok(scaled as i64)
            } else {
                Err(e)
            }
        }
        Err(e) => Err(e),
    }
}

/// Typed access to a line's fields; every error names the field.
struct Fields<'a>(&'a Map<String, Value>);

impl Fields<'_> {
    fn get(&self, k: &str) -> Option<&Value> {
        self.0.get(k).filter(|v| !v.is_null())
    }

    fn string(&self, k: &str) -> Result<String, String> {
        match self.0.get(k) {
            None => Err(format!("missing field `{k}`")),
            Some(Value::Null) => Err(format!("{k}: must not be null")),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(format!("{k}: expected a string, got {other}")),
        }
    }

    fn opt_string(&self, k: &str) -> Result<Option<String>, String> {
        match self.get(k) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!("{k}: expected a string or null, got {other}")),
        }
    }

    /// A non-empty raw name (history status, milestone, stage).
    fn name(&self, k: &str) -> Result<String, String> {
        let s = self.string(k)?;
        if s.trim().is_empty() {
            return Err(format!("{k}: must not be empty"));
        }
        Ok(s)
    }

    /// A non-empty identifier (deal ids need not be UUIDs).
    fn id_string(&self, k: &str) -> Result<String, String> {
        match self.0.get(k) {
            Some(Value::Number(n)) => Ok(n.to_string()),
            _ => self.name(k),
        }
    }

    fn uuid(&self, k: &str) -> Result<String, String> {
        let s = self.string(k)?;
        parse_uuid(&s).ok_or_else(|| format!("{k}: `{s}` is not a UUID"))
    }

    fn opt_uuid(&self, k: &str) -> Result<Option<String>, String> {
        match self.opt_string(k)? {
            None => Ok(None),
            Some(s) => parse_uuid(&s)
                .map(Some)
                .ok_or_else(|| format!("{k}: `{s}` is not a UUID")),
        }
    }

    fn instant(&self, k: &str) -> Result<i64, String> {
        let s = self.string(k)?;
        parse_instant(&s).ok_or_else(|| format!("{k}: `{s}` is not an ISO 8601 date-time"))
    }

    fn opt_instant(&self, k: &str) -> Result<Option<i64>, String> {
        match self.opt_string(k)? {
            None => Ok(None),
            Some(s) => parse_instant(&s)
                .map(Some)
                .ok_or_else(|| format!("{k}: `{s}` is not an ISO 8601 date-time")),
        }
    }

    fn opt_decimal(&self, k: &str) -> Result<Option<i64>, String> {
        match self.get(k) {
            None => Ok(None),
            Some(Value::Number(n)) => decimal_number(n).map(Some).map_err(|e| format!("{k}: {e}")),
            Some(Value::String(s)) => parse_decimal(s).map(Some).map_err(|e| format!("{k}: {e}")),
            Some(other) => Err(format!("{k}: expected a decimal number, got {other}")),
        }
    }

    fn opt_enum(&self, k: &str, allowed: &[&str]) -> Result<Option<String>, String> {
        match self.opt_string(k)? {
            Some(s) if !allowed.contains(&s.as_str()) => {
                Err(format!("{k}: `{s}` is not one of {}", allowed.join(", ")))
            }
            other => Ok(other),
        }
    }

    fn opt_bool(&self, k: &str) -> Result<Option<bool>, String> {
        match self.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(format!("{k}: `{other}` is not true or false")),
        }
    }

    fn strings(&self, k: &str) -> Result<Vec<String>, String> {
        match self.get(k) {
            None => Ok(vec![]),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::String(s) if !s.trim().is_empty() => Ok(s.clone()),
                    other => Err(format!(
                        "{k}[{i}]: expected a non-empty string, got {other}"
                    )),
                })
                .collect(),
            Some(other) => Err(format!("{k}: expected an array of strings, got {other}")),
        }
    }

    fn uuids(&self, k: &str) -> Result<Vec<String>, String> {
        self.strings(k)?
            .into_iter()
            .enumerate()
            .map(|(i, s)| parse_uuid(&s).ok_or_else(|| format!("{k}[{i}]: `{s}` is not a UUID")))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(file: &str, line: &str) -> String {
        match parse_line(file, line) {
            Err(e) => e,
            Ok(_) => panic!("accepted: {line}"),
        }
    }

    const LOAN: &str = r#"{"id":"6f1c2d3e-0000-4000-8000-00000000000a","status":"Loan Open","loanAmount":350000.25}"#;

    #[test]
    fn a_good_loan_parses() {
        assert!(parse_line("loans.jsonl", LOAN).is_ok());
    }

    #[test]
    fn each_bad_field_is_named() {
        assert_eq!(
            err(
                "loans.jsonl",
                &LOAN.replace("6f1c2d3e-0000-4000-8000-00000000000a", "x")
            ),
            "id: `x` is not a UUID"
        );
        assert_eq!(
            err("loans.jsonl", &LOAN.replace("Loan Open", "Loan Opened")),
            "status: unknown loan status `Loan Opened`"
        );
        assert_eq!(
            err("loans.jsonl", &LOAN.replace("350000.25", "\"12.34567\"")),
            "loanAmount: `12.34567` has more than 4 decimal places"
        );
        assert_eq!(
            err("loans.jsonl", &LOAN.replace("350000.25", "12.34567")),
            "loanAmount: `12.34567` has more than 4 decimal places"
        );
        assert!(
            parse_line(
                "loans.jsonl",
                &LOAN.replace("350000.25", "2716709.1999999997")
            )
            .is_ok(),
            "float noise is tolerated in numbers"
        );
        assert_eq!(
            err(
                "loans.jsonl",
                &LOAN.replace("}", r#","statusDate":"last week"}"#)
            ),
            "statusDate: `last week` is not an ISO 8601 date-time"
        );
        assert_eq!(
            err("loans.jsonl", r#"{"status":"Loan Open"}"#),
            "missing field `id`"
        );
        assert_eq!(
            err(
                "los_status_history.jsonl",
                r#"{"loanId":"6f1c2d3e-0000-4000-8000-00000000000a","status":"","occurredAt":"2026-01-01"}"#
            ),
            "status: must not be empty"
        );
        assert!(err("loans.jsonl", "{nope").starts_with("not valid JSON"));
        assert_eq!(err("loans.jsonl", "[1]"), "not a JSON object");
    }

    mod fuzz {
        use super::*;
        use proptest::prelude::*;

        const FILES: [&str; 5] = [
            "agents.jsonl",
            "loans.jsonl",
            "los_status_history.jsonl",
            "dw_loan_milestones.jsonl",
            "dw_deals.jsonl",
        ];

        fn field_value() -> impl Strategy<Value = serde_json::Value> {
            prop_oneof![
                ".{0,10}".prop_map(serde_json::Value::String),
                Just(serde_json::json!("00000000-0000-0000-0000-0000000000b2")),
                Just(serde_json::json!("2026-03-01T10:00:00Z")),
                Just(serde_json::json!("Closed")),
                Just(serde_json::json!(["Agent"])),
                any::<f64>().prop_map(|f| serde_json::json!(f)),
                any::<i64>().prop_map(|i| serde_json::json!(i)),
                any::<bool>().prop_map(|b| serde_json::json!(b)),
                Just(serde_json::Value::Null),
            ]
        }

        fn line() -> impl Strategy<Value = String> {
            let key = prop::sample::select(vec![
                "id",
                "email",
                "roles",
                "managedAgentIds",
                "active",
                "status",
                "statusDate",
                "loanAmount",
                "loanId",
                "occurredAt",
                "milestone",
                "createdAt",
                "stage",
                "companyId",
            ]);
            prop::collection::vec((key, field_value()), 0..8).prop_map(|kv| {
                serde_json::Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
                    .to_string()
            })
        }

        proptest! {
            #[test]
            fn fuzz_import_lines_never_panic(file in prop::sample::select(FILES.to_vec()), l in line()) {
                if let Err(e) = parse_line(file, &l) {
                    prop_assert!(!e.is_empty());
                }
            }

            #[test]
            fn fuzz_import_of_arbitrary_text_never_panics(file in prop::sample::select(FILES.to_vec()), l in ".{0,200}") {
                let _ = parse_line(file, &l);
            }
        }
    }
}
