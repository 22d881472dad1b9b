//! The PostgreSQL executor: read-only report sessions keeping their `statement_timeout` and
//! how they plan, a broken session retried on a fresh one.

use std::sync::Arc;
use std::time::Instant;

use sqlx::Row;

use super::columns::{undecodable, Out, P};
use super::compiled::Compiled;
use super::intake::{is_broken, timed_out, unavailable, Allowance, Failed, Fetched, ATTEMPTS};
use super::ir::{QueryError, Value};
use super::sink::Sink;
use crate::data::report_store::{session_timeout_ms, PgReads};
use crate::data::store::number_placeholders;

/// A statement on PostgreSQL, on a session that plans as the statement asks
/// (`Compiled::plans`), run again on another connection when its pooled one turns out broken
/// before the first row.
pub(super) async fn execute_postgres(
    reads: &Arc<PgReads>,
    c: &Compiled,
    allowance: Allowance,
) -> Result<Fetched, QueryError> {
    let mut attempt = 1;
    loop {
        match execute_postgres_once(reads, c, allowance).await {
            Ok(fetched) => return Ok(fetched),
            Err(Failed::Final(e)) => return Err(e),
            Err(Failed::Broken(e)) if attempt < ATTEMPTS && Instant::now() < allowance.deadline => {
                tracing::warn!(error = %e, attempt, "a pooled connection was broken; retrying the statement on another");
                // What broke one idle session (a restart, a proxy's idle timeout) most likely
                // broke the others too: the retry opens a fresh one.
                reads.forget_idle();
                attempt += 1;
            }
            Err(Failed::Broken(e)) => return Err(unavailable(&e)),
        }
    }
}

pub(super) async fn execute_postgres_once(
    reads: &Arc<PgReads>,
    c: &Compiled,
    allowance: Allowance,
) -> Result<Fetched, Failed> {
    use futures_util::TryStreamExt as _;
    let mut sink = Sink::new(c, allowance);
    let counted = sink.counts_groups();
    let left = || allowance.deadline.saturating_duration_since(Instant::now());
    let mut lease = match tokio::time::timeout(left(), reads.acquire(c.plans)).await {
        Err(_) => return Err(timed_out(&allowance).into()),
        Ok(Err(e)) if is_broken(&e) => return Err(Failed::Broken(e)),
        Ok(Err(e)) => return Err(unavailable(&e).into()),
        Ok(Ok(lease)) => lease,
    };
    // The server stops the statement itself, at the session's `statement_timeout`; the
    // session keeps it, and how it plans, for the next statement (report_store.rs), and
    // serves nothing else.
    let settings = async {
        lease.statement_timeout(session_timeout_ms(left())).await?;
        lease.plans(c.plans).await
    };
    match settings.await {
        Err(e) if is_broken(&e) => return Err(Failed::Broken(e)),
        Err(e) => return Err(unavailable(&e).into()),
        Ok(()) => {}
    }
    let numbered = number_placeholders(&c.sql);
    let mut query = sqlx::query(&numbered);
    for p in &c.params {
        query = match p {
            P::T(s) => query.bind(s.clone()),
            P::I(i) => query.bind(*i),
        };
    }
    let mut stream = query.fetch(lease.conn());
    loop {
        let row = match stream.try_next().await {
            Ok(Some(row)) => row,
            Ok(None) => break,
            Err(e) if is_pg_cancel(&e) => {
                // Stopped by the server: the session itself is sound.
                drop(stream);
                lease.release();
                return Err(timed_out(&allowance).into());
            }
            // A broken connection shows itself on the first exchange, before any row.
            Err(e) if is_broken(&e) && sink.is_empty() => return Err(Failed::Broken(e)),
            Err(e) => return Err(unavailable(&e).into()),
        };
        let mut values = Vec::with_capacity(c.outs.len());
        for (i, o) in c.outs.iter().enumerate() {
            let v = match o {
                Out::Text => row
                    .try_get::<Option<String>, _>(i)
                    .map(|v| v.map(Value::Text)),
                Out::Int | Out::Instant | Out::Decimal | Out::Week => row
                    .try_get::<Option<i64>, _>(i)
                    .map(|v| v.map(|n| o.of_integer(n))),
            }
            .map_err(|e| undecodable(i, &e))?;
            values.push(v.unwrap_or(Value::Null));
        }
        let total: i64 = if counted {
            row.try_get(c.outs.len()).unwrap_or(0)
        } else {
            0
        };
        sink.push(values, total)?;
    }
    drop(stream);
    lease.release();
    sink.finish().map_err(Failed::from)
}

/// PostgreSQL's `query_canceled` (57014), raised by `statement_timeout`.
pub(super) fn is_pg_cancel(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(d) if d.code().as_deref() == Some("57014"))
}
