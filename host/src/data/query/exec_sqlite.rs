//! The SQLite executor: read-only connections of the reports' own, a statement stepped on a
//! blocking thread and stopped by its progress handler at the deadline.

use std::sync::Arc;
use std::time::Instant;

use super::columns::{undecodable, Out};
use super::compiled::Compiled;
use super::intake::{timed_out, unavailable, Allowance, Fetched};
use super::ir::{QueryError, Value};
use super::sink::Sink;
use crate::data::report_store::{ReadError, SqliteReads};

/// The result column `i` of a SQLite row as the compiler typed it.
pub(super) fn sqlite_value(
    row: &rusqlite::Row<'_>,
    i: usize,
    out: Out,
) -> Result<Value, QueryError> {
    use rusqlite::types::ValueRef;
    let v = row.get_ref(i).map_err(|e| unavailable(&e))?;
    Ok(match (out, v) {
        (_, ValueRef::Null) => Value::Null,
        (Out::Text, ValueRef::Text(t)) => Value::Text(String::from_utf8_lossy(t).into_owned()),
        (Out::Int | Out::Instant | Out::Decimal | Out::Week, ValueRef::Integer(n)) => {
            out.of_integer(n)
        }
        (out, v) => {
            return Err(undecodable(
                i,
                &format!("{:?} where {out:?} was expected", v.data_type()),
            ))
        }
    })
}

/// A statement on SQLite: stepped to its end on a blocking thread, stopped by the engine at
/// the deadline (report_store.rs).
pub(super) async fn execute_sqlite(
    reads: &Arc<SqliteReads>,
    c: Compiled,
    allowance: Allowance,
) -> Result<Fetched, QueryError> {
    let deadline = allowance.deadline;
    let outcome = reads
        .run(deadline, move |conn| {
            let mut sink = Sink::new(&c, allowance);
            let counted = sink.counts_groups();
            let failed = |e: rusqlite::Error| {
                if Instant::now() >= deadline
                    || e.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted)
                {
                    timed_out(&allowance)
                } else {
                    unavailable(&e)
                }
            };
            let mut statement = conn.prepare_cached(&c.sql).map_err(failed)?;
            let mut rows = statement
                .query(rusqlite::params_from_iter(&c.params))
                .map_err(failed)?;
            while let Some(row) = rows.next().map_err(failed)? {
                let values = c
                    .outs
                    .iter()
                    .enumerate()
                    .map(|(i, o)| sqlite_value(row, i, *o))
                    .collect::<Result<Vec<_>, _>>()?;
                let total = if counted {
                    row.get::<_, Option<i64>>(c.outs.len()).ok().flatten()
                } else {
                    None
                };
                sink.push(values, total.unwrap_or(0))?;
            }
            sink.finish()
        })
        .await;
    match outcome {
        Ok(fetched) => fetched,
        Err(ReadError::Busy) => Err(timed_out(&allowance)),
        Err(e @ ReadError::Unavailable(_)) => Err(unavailable(&e)),
    }
}
