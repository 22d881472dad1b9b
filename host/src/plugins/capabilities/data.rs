//! `loan:reporting/data`: structured queries. Checks that the dataset exists and that the
//! plugin's manifest grants it, resolves the caller's scope from the database for
//! caller-scoped datasets (on every call), and hands the query to the compiler in
//! `crate::data::query`; a query that is the call's last cut groups without their keys is
//! answered from the totals their statement appended (`query::answer_from_totals`).
//! Refusals are values the guest sees; spent budgets (queries, rows, bytes, database time:
//! the manifest's `[limits]`) trap, so a guest cannot carry on past them.

use std::time::{Duration, Instant};

use crate::data::catalog::Dataset;
use crate::data::query::{
    self, Aggregate, Allowance, Condition, Key, PeriodUnit, Query, QueryError, Value,
};
use crate::data::scope::Scope;
use crate::plugins::bindings::data as wit;
use crate::plugins::bindings::data::{DataError, Host, Rows};
use crate::plugins::state::{CallTotals, LimitHit, PluginState};

impl Host for PluginState {
    async fn run(&mut self, q: wit::Query) -> wasmtime::Result<Result<Rows, DataError>> {
        let Some(call) = self.call.as_ref() else {
            return Err(super::no_call_in_describe("data.run"));
        };
        let Some(dataset) = Dataset::parse(&q.dataset) else {
            return Ok(Err(DataError::InvalidQuery(format!(
                "unknown dataset `{}`; known: {}",
                q.dataset,
                Dataset::ALL.map(|d| d.as_str()).join(", ")
            ))));
        };
        if !self.manifest.grants(dataset) {
            return Ok(Err(DataError::Denied(format!(
                "dataset `{}` is not granted to plugin `{}`",
                dataset.as_str(),
                self.manifest.name
            ))));
        }
        let Some(reports) = self.reports.clone() else {
            return Ok(Err(DataError::Unavailable(format!(
                "dataset `{}` has no data store here",
                dataset.as_str()
            ))));
        };
        let identity = call.identity.clone();
        // One statement at a time per caller, over all their calls; the wait counts against
        // this call's deadline.
        let slot = call.statements.clone();
        let wait = self.deadline.saturating_duration_since(Instant::now());
        let _statement = match tokio::time::timeout(wait, slot.acquire_owned()).await {
            Ok(Ok(permit)) => permit,
            _ => {
                return Err(wasmtime::Error::new(LimitHit {
                    timeout: true,
                    message: "waited past its deadline for the caller's other statements".into(),
                }))
            }
        };
        let allowance = self.next_allowance()?;
        let started = Instant::now();
        let db = &reports.db;
        let remembered = self.totals.as_ref();
        let outcome = async {
            let scope = if dataset.is_org_wide() {
                None
            } else {
                match Scope::resolve(db, &identity).await {
                    Ok(s) => Some(s),
                    Err(e) => {
                        tracing::error!(error = %e, "cannot resolve the caller's scope");
                        return Err(QueryError::Unavailable(
                            "the caller's scope could not be resolved".into(),
                        ));
                    }
                }
            };
            let host_query = convert(dataset, q);
            // The call's last cut groups, read in the same scope, may answer this query
            // without their keys: the same rows, added up.
            let answered = remembered
                .and_then(|t| t.answer(&scope, &host_query))
                .filter(|rows| rows.bytes <= allowance.max_bytes);
            if let Some(rows) = answered {
                return Ok((rows, Answered::FromTotals));
            }
            // Organisation-wide statements queue for a heavy slot (within the deadline).
            let heavy = dataset.is_org_wide() || scope.as_ref().is_some_and(|s| s.all);
            let _slot = reports
                .admit(heavy, allowance.deadline)
                .await
                .map_err(|e| QueryError::Timeout(e.to_string()))?;
            let mut rows = query::run(
                &reports.store,
                &host_query,
                scope.as_ref(),
                identity.can_read_names(),
                allowance,
            )
            .await?;
            let answered = match rows.totals.take() {
                Some(row) => Answered::WithTotals(Box::new(CallTotals {
                    query: host_query,
                    scope,
                    row,
                })),
                None => Answered::Statement,
            };
            Ok((rows, answered))
        }
        .await;
        self.usage.db_time += started.elapsed();
        match outcome {
            Ok((rows, answered)) => {
                match answered {
                    Answered::Statement => {}
                    Answered::WithTotals(totals) => self.totals = Some(*totals),
                    Answered::FromTotals => self.usage.from_totals += 1,
                }
                self.usage.rows += rows.rows.len() as u64;
                self.usage.bytes += rows.bytes;
                Ok(Ok(Rows {
                    columns: rows.columns,
                    rows: rows
                        .rows
                        .into_iter()
                        .map(|r| r.into_iter().map(to_wit).collect())
                        .collect(),
                    truncated: rows.truncated,
                    total_groups: rows.total_groups,
                }))
            }
            Err(QueryError::Denied(m)) => Ok(Err(DataError::Denied(m))),
            Err(QueryError::Invalid(m)) => Ok(Err(DataError::InvalidQuery(m))),
            Err(QueryError::Unavailable(m)) => Ok(Err(DataError::Unavailable(m))),
            // Limits trap (the WIT contract): the guest cannot catch them and carry on.
            Err(QueryError::Timeout(m)) => Err(wasmtime::Error::new(LimitHit {
                timeout: true,
                message: format!("ran out of database time: {m}"),
            })),
            Err(QueryError::TooLarge(m)) => Err(wasmtime::Error::new(LimitHit {
                timeout: false,
                message: format!("exceeded its per-call data budget: {m}"),
            })),
        }
    }
}

/// What answered a query.
enum Answered {
    /// Its statement.
    Statement,
    /// Its statement, which also added up the groups its limit cut: kept for the call.
    WithTotals(Box<CallTotals>),
    /// The totals of the call's cut groups, without a statement.
    FromTotals,
}

impl PluginState {
    /// Counts one more query against the manifest's `[limits]` and returns what it may
    /// spend: the least of the database time left, the statement timeout and the call's
    /// own deadline; the rows and bytes left. A spent budget traps.
    fn next_allowance(&mut self) -> wasmtime::Result<Allowance> {
        let limits = self.manifest.limits;
        let spent = |message: String| {
            Err(wasmtime::Error::new(LimitHit {
                timeout: false,
                message,
            }))
        };
        if self.usage.queries >= limits.max_queries {
            return spent(format!(
                "ran more than its {} data queries per call (limits.max_queries)",
                limits.max_queries
            ));
        }
        let db_budget = Duration::from_millis(limits.db_time_ms);
        if self.usage.db_time >= db_budget {
            return Err(wasmtime::Error::new(LimitHit {
                timeout: true,
                message: format!(
                    "spent its {} ms of database time per call (limits.db_time_ms)",
                    limits.db_time_ms
                ),
            }));
        }
        if self.usage.rows >= limits.max_rows {
            return spent(format!(
                "received its {} rows per call (limits.max_rows)",
                limits.max_rows
            ));
        }
        if self.usage.bytes >= limits.max_data_bytes {
            return spent(format!(
                "received its {} bytes of query results per call (limits.max_data_bytes)",
                limits.max_data_bytes
            ));
        }
        self.usage.queries += 1;
        let now = Instant::now();
        let deadline = (now + (db_budget - self.usage.db_time))
            .min(now + query::STATEMENT_TIMEOUT)
            .min(self.deadline);
        Ok(Allowance {
            deadline,
            max_rows: (limits.max_rows - self.usage.rows).min(query::ROW_CAP as u64),
            max_bytes: limits.max_data_bytes - self.usage.bytes,
        })
    }
}

fn convert(dataset: Dataset, q: wit::Query) -> Query {
    Query {
        dataset,
        filter: q.filter,
        predicates: q
            .predicates
            .into_iter()
            .map(|p| (p.field, condition(p.condition)))
            .collect(),
        group_by: q
            .group_by
            .into_iter()
            .map(|k| match k {
                wit::Key::Field(f) => Key::Field(f),
                wit::Key::Period((f, u)) => Key::Period(
                    f,
                    match u {
                        wit::PeriodUnit::Week => PeriodUnit::Week,
                        wit::PeriodUnit::Month => PeriodUnit::Month,
                        wit::PeriodUnit::Quarter => PeriodUnit::Quarter,
                        wit::PeriodUnit::Year => PeriodUnit::Year,
                    },
                ),
                wit::Key::Mapped(m) => Key::Mapped(m.field, m.entries, m.otherwise),
            })
            .collect(),
        distinct_on: q.distinct_on,
        aggregates: q
            .aggregates
            .into_iter()
            .map(|a| match a {
                wit::Aggregate::Count => Aggregate::Count,
                wit::Aggregate::CountOf(f) => Aggregate::CountOf(f),
                wit::Aggregate::CountDistinct(f) => Aggregate::CountDistinct(f),
                wit::Aggregate::Sum(f) => Aggregate::Sum(f),
                wit::Aggregate::Min(f) => Aggregate::Min(f),
                wit::Aggregate::Max(f) => Aggregate::Max(f),
            })
            .collect(),
        order_by: q
            .order_by
            .into_iter()
            .map(|o| (o.column, o.descending))
            .collect(),
        limit: q.limit,
    }
}

fn condition(c: wit::Condition) -> Condition {
    match c {
        wit::Condition::Eq(v) => Condition::Eq(from_wit(v)),
        wit::Condition::Ne(v) => Condition::Ne(from_wit(v)),
        wit::Condition::Lt(v) => Condition::Lt(from_wit(v)),
        wit::Condition::Le(v) => Condition::Le(from_wit(v)),
        wit::Condition::Gt(v) => Condition::Gt(from_wit(v)),
        wit::Condition::Ge(v) => Condition::Ge(from_wit(v)),
        wit::Condition::AnyOf(vs) => Condition::AnyOf(vs.into_iter().map(from_wit).collect()),
        wit::Condition::IsNull => Condition::IsNull,
        wit::Condition::IsNotNull => Condition::IsNotNull,
    }
}

fn from_wit(v: wit::Value) -> Value {
    match v {
        wit::Value::Null => Value::Null,
        wit::Value::Boolean(b) => Value::Boolean(b),
        wit::Value::Integer(i) => Value::Integer(i),
        wit::Value::Decimal(s) => Value::Decimal(s),
        wit::Value::Text(s) => Value::Text(s),
        wit::Value::Timestamp(s) => Value::Timestamp(s),
    }
}

fn to_wit(v: Value) -> wit::Value {
    match v {
        Value::Null => wit::Value::Null,
        Value::Boolean(b) => wit::Value::Boolean(b),
        Value::Integer(i) => wit::Value::Integer(i),
        Value::Decimal(s) => wit::Value::Decimal(s),
        Value::Text(s) => wit::Value::Text(s),
        Value::Timestamp(s) => wit::Value::Timestamp(s),
    }
}
