//! The call's budgets for one statement (`Allowance`) and the intake of its rows: rows and
//! decoded bytes counted as they arrive, so a result is never decoded past its allowance.

use std::time::Instant;

use super::ir::{QueryError, Value};
use super::limits::{ROW_CAP, STATEMENT_TIMEOUT};

/// What one statement may spend: the instant it must have finished by, and the rows and
/// bytes (decoded, as the guest will receive them) it may deliver. The caller derives these
/// from what is left of the plugin call's budgets.
#[derive(Debug, Clone, Copy)]
pub struct Allowance {
    /// The statement is stopped inside the engine at this instant.
    pub deadline: Instant,
    /// Rows the statement may return.
    pub max_rows: u64,
    /// Bytes of decoded values the statement may return.
    pub max_bytes: u64,
}

impl Allowance {
    /// The default for one statement on its own: [`STATEMENT_TIMEOUT`], [`ROW_CAP`] rows,
    /// [`DEFAULT_MAX_BYTES`].
    pub fn standard() -> Allowance {
        Allowance {
            deadline: Instant::now() + STATEMENT_TIMEOUT,
            max_rows: ROW_CAP as u64,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

/// Bytes one statement may deliver unless the caller says otherwise.
pub const DEFAULT_MAX_BYTES: u64 = 8 * 1024 * 1024;

/// What a statement delivered.
pub(super) struct Fetched {
    pub(super) rows: Vec<Vec<Value>>,
    pub(super) total: u64,
    pub(super) bytes: u64,
    /// The row answering the query without its keys, when cut groups add up (`HostOrder`).
    pub(super) totals: Option<Vec<Value>>,
    /// Nothing was delivered: the fold needs the statement's `full` one
    /// (`SetFold::needs_full`).
    pub(super) needs_full: bool,
}

/// Decoded size of a value, as counted against the bytes allowance.
pub(super) fn value_bytes(v: &Value) -> u64 {
    match v {
        Value::Null | Value::Boolean(_) => 1,
        Value::Integer(_) => 8,
        Value::Decimal(s) | Value::Text(s) | Value::Timestamp(s) => s.len() as u64 + 8,
    }
}

pub(super) fn timed_out(allowance: &Allowance) -> QueryError {
    QueryError::Timeout(format!(
        "the query was stopped at its deadline ({} ms of database time were left)",
        allowance
            .deadline
            .saturating_duration_since(Instant::now())
            .as_millis()
    ))
}

/// Rows and bytes delivered so far, checked against the allowance as each row is decoded.
pub(super) struct Intake {
    pub(super) rows: Vec<Vec<Value>>,
    pub(super) total: u64,
    pub(super) bytes: u64,
    pub(super) totals: Option<Vec<Value>>,
    pub(super) allowance: Allowance,
}

impl Intake {
    pub(super) fn new(allowance: Allowance) -> Intake {
        Intake {
            rows: Vec::new(),
            total: 0,
            bytes: 0,
            totals: None,
            allowance,
        }
    }

    /// What the statement delivered.
    pub(super) fn finish(self) -> Fetched {
        Fetched {
            rows: self.rows,
            total: self.total,
            bytes: self.bytes,
            totals: self.totals,
            needs_full: false,
        }
    }

    /// One decoded statement row, as is.
    pub(super) fn push(&mut self, values: Vec<Value>, total: i64) -> Result<(), QueryError> {
        let bytes: u64 = values.iter().map(value_bytes).sum();
        self.bytes += bytes;
        if self.rows.len() as u64 >= self.allowance.max_rows {
            return Err(QueryError::TooLarge(format!(
                "the query returned more than the {} rows left in this call's budget",
                self.allowance.max_rows
            )));
        }
        if self.bytes > self.allowance.max_bytes {
            return Err(QueryError::TooLarge(format!(
                "the query returned more than the {} bytes left in this call's budget",
                self.allowance.max_bytes
            )));
        }
        self.total = total.max(0) as u64;
        self.rows.push(values);
        Ok(())
    }
}

/// How one attempt at a statement ended, when it did not deliver.
pub(super) enum Failed {
    /// The statement's own outcome (deadline, limits, a database error): final.
    Final(QueryError),
    /// The connection turned out broken before a row arrived (the database restarted since
    /// the pool last used it): the statement may run again on another connection.
    Broken(sqlx::Error),
}

impl From<QueryError> for Failed {
    fn from(e: QueryError) -> Self {
        Failed::Final(e)
    }
}

/// Errors of the connection rather than of the statement: the socket or the driver failed, or
/// PostgreSQL said why it dropped the session (SQLSTATE class 08, or 57P01–57P03: the backend
/// was terminated, crashed or is restarting) before closing it.
pub(super) fn is_broken(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_) | sqlx::Error::Protocol(_) | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(d) => d
            .code()
            .is_some_and(|c| c.starts_with("08") || matches!(&*c, "57P01" | "57P02" | "57P03")),
        _ => false,
    }
}

/// Attempts at a statement whose connections turn out broken (the pool hands connections out
/// untested; a report statement only reads, so running it again is safe).
pub(super) const ATTEMPTS: u32 = 3;

pub(super) fn unavailable(e: &dyn std::fmt::Display) -> QueryError {
    tracing::error!(error = %e, "query failed");
    QueryError::Unavailable("the data store could not run the query".into())
}
