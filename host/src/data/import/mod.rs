//! `loanhost import <dir>`: the JSON Lines contract of docs/design.md §5. Files stream line by
//! line; every line is validated (`file:line: reason` on the first bad one); everything runs
//! in one transaction, so a failed import keeps nothing; re-importing is idempotent (upsert by
//! id; history rows dedupe on all their fields).

use std::path::Path;

use tokio::io::{AsyncBufReadExt, BufReader};

use super::store::{Db, DbError};
use crate::data::import::parse::{parse_line, Record};
use crate::data::import::tx::Tx;
use crate::data::import::write::write;

pub use applications::{sensitive_path, SENSITIVE_KEYS};
pub use error::ImportError;
pub use sheets::{CREDIT_SCORES, OCCUPANCIES};
use tables::Stale;
pub use tables::FILES;

mod applications;
mod error;
mod parse;
mod people;
mod persons;
mod sheets;
mod tables;
mod totals;
mod tx;
mod write;

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
    let mut stale = Stale::default();
    for file in present {
        // Into an empty table, the secondary indexes are built once at the end of the file
        // (sorted, in one pass) instead of row by row: a first import of a million loans
        // spends most of its time inserting into indexes otherwise. Still one transaction.
        let table = table_of(file);
        let empty = match table {
            Some(table) => tx.is_empty(table).await?,
            None => false,
        };
        let deferred = match table {
            Some(table) if empty => tx.drop_indexes(table).await?,
            _ => Vec::new(),
        };
        // Loans into an empty snapshot: every total is counted once at the end.
        if empty && file == "loans.jsonl" {
            stale.totals_all = true;
        }
        // The directory names the people of the snapshot: every person's row is written again.
        if file == "agents.jsonl" {
            stale.people_all = true;
        }
        // Loans are written before the history (FILES' order): an empty history now is empty
        // while they are written, and they have no history rows to bring in step. History
        // written into an empty table gets its period sets built once at the end, like the
        // indexes, instead of batch by batch.
        let history_empty = matches!(file, "loans.jsonl" | "los_status_history.jsonl")
            && tx.is_empty("los_status_history").await?;
        let rows = import_file(
            &mut tx,
            &dir.join(file),
            file,
            history_empty,
            &mut stale,
            &mut progress,
        )
        .await?;
        for create in deferred {
            tx.exec(&create, &[]).await?;
        }
        if let Some(table) = table.filter(|_| empty) {
            tx.analyze(table).await?;
        }
        if file == "los_status_history.jsonl" && history_empty {
            tx.build_history_sets().await?;
            stale.all = true;
        }
        report.files.push((file.to_string(), rows));
    }
    tx.count_sets(&stale).await?;
    tx.count_warehouse(&stale).await?;
    tx.count_totals(&stale).await?;
    tx.write_people(&stale).await?;
    tx.write_person_loans(&stale).await?;
    tx.commit().await?;
    if let Db::Sqlite(pool) = db {
        checkpoint(pool).await;
    }
    Ok(report)
}

/// Copies an import's pages from SQLite's write-ahead log back into the database file and
/// empties the log. An import writes the whole database through the log (2.3 GB at 1M
/// loans); left there, every read looks its pages up in the log's index until something
/// checkpoints it (a ConciergeKey's 1 ms statements took 3 ms over an import's log). Best
/// effort, after the commit: readers in flight keep their pages, and what they hold back is
/// copied by SQLite's own checkpoints after later writes.
async fn checkpoint(pool: &sqlx::SqlitePool) {
    if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(pool)
        .await
    {
        tracing::warn!(error = %e, "the import's write-ahead log was not checkpointed");
    }
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

/// Rows held before a batch is written.
const FLUSH_ROWS: usize = 5_000;

async fn import_file(
    tx: &mut Tx,
    path: &Path,
    file: &str,
    history_empty: bool,
    stale: &mut Stale,
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
            write(tx, file, std::mem::take(&mut pending), history_empty, stale).await?;
        }
        if rows % 100_000 == 0 {
            progress(file, rows);
        }
    }
    write(tx, file, pending, history_empty, stale).await?;
    progress(file, rows);
    Ok(rows)
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

    #[tokio::test]
    async fn an_import_leaves_sqlites_write_ahead_log_empty() {
        // Arrange: a database file, and a folder of loans to import into it.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let db = Db::open(&format!("sqlite://{}", path.display()))
            .await
            .unwrap();
        let files = dir.path().join("import");
        std::fs::create_dir(&files).unwrap();
        let loans: Vec<String> = (0..300)
            .map(|i| LOAN.replace("00000000000a", &format!("{i:012x}")))
            .collect();
        std::fs::write(files.join("loans.jsonl"), loans.join("\n") + "\n").unwrap();

        // Act
        import_dir(&db, &files, |_, _| {}).await.unwrap();

        // Assert: the rows are in the database file, and the log is empty.
        let wal = dir.path().join("t.db-wal");
        let logged = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
        assert_eq!(logged, 0, "{}", wal.display());
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
