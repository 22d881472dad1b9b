//! `loan:reporting/data`: structured queries. Checks that the dataset exists and that the
//! plugin's manifest grants it, resolves the caller's scope from the database for
//! caller-scoped datasets (on every call), and hands the query to the compiler in
//! `crate::data::query`; a query that is the call's last cut groups without their keys is
//! answered from the totals their statement appended (`query::answer_from_totals`).
//! Refusals are values the guest sees; spent budgets (queries, rows, bytes, database time:
//! the manifest's `[limits]`) trap, so a guest cannot carry on past them.

use std::time::{Duration, Instant};

use crate::data::catalog::Dataset;
use crate::data::query::{self, Allowance, Query, QueryError};
use crate::data::scope::Scope;
use crate::plugins::sandbox::state::{CallTotals, LimitHit, PluginState};

/// Why a query was not run, as the plugin is told (each WIT version has its `data-error`).
pub(super) enum Refusal {
    /// `denied`.
    Denied(String),
    /// `invalid-query`.
    InvalidQuery(String),
    /// `unavailable`.
    Unavailable(String),
}

impl PluginState {
    /// A `data` query of `dataset_name`, as `make` builds it once the dataset is known: the
    /// checks, scope and budgets of every version's `data.run` (see [`super::data_wit`]), and
    /// the rows. Marks its start and end for a profile.
    pub(super) async fn run_query(
        &mut self,
        dataset_name: &str,
        make: impl FnOnce(Dataset) -> Query,
    ) -> wasmtime::Result<Result<query::Rows, Refusal>> {
        self.mark("data-entered");
        let answer = self.run_query_unmarked(dataset_name, make).await;
        self.mark("data-left");
        answer
    }

    async fn run_query_unmarked(
        &mut self,
        dataset_name: &str,
        make: impl FnOnce(Dataset) -> Query,
    ) -> wasmtime::Result<Result<query::Rows, Refusal>> {
        let Some(call) = self.call.as_ref() else {
            return Err(super::no_call_in_describe("data.run"));
        };
        let (dataset, grant) = match self.granted(dataset_name) {
            Ok(granted) => granted,
            Err(r) => return Ok(Err(r)),
        };
        // The fields the manifest names, and listing: before anything answers the query.
        let host_query = make(dataset);
        if let Err(m) = grant.check(&host_query) {
            return Ok(Err(self.denied(m)));
        }
        let reports = match self.store(dataset) {
            Ok(reports) => reports,
            Err(r) => return Ok(Err(r)),
        };
        let identity = call.identity.clone();
        let _statement = self.statement_slot().await?;
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
                Ok(Ok(rows))
            }
            Err(e) => Refusal::of(e).map(Err),
        }
    }

    /// The dataset named `name` and the manifest's grant of it, or why a query or a list of it
    /// is refused.
    pub(super) fn granted(
        &self,
        name: &str,
    ) -> Result<(Dataset, &crate::data::grant::Grant), Refusal> {
        let Some(dataset) = Dataset::parse(name) else {
            return Err(Refusal::InvalidQuery(format!(
                "unknown dataset `{name}`; known: {}",
                Dataset::ALL.map(|d| d.as_str()).join(", ")
            )));
        };
        let Some(grant) = self.manifest.grant(dataset) else {
            return Err(Refusal::Denied(format!(
                "dataset `{}` is not granted to plugin `{}`",
                dataset.as_str(),
                self.manifest.name
            )));
        };
        Ok((dataset, grant))
    }

    /// The store that answers `dataset` (none in `loanhost plugin check`).
    pub(super) fn store(&self, dataset: Dataset) -> Result<crate::data::Reports, Refusal> {
        self.reports.clone().ok_or_else(|| {
            Refusal::Unavailable(format!(
                "dataset `{}` has no data store here",
                dataset.as_str()
            ))
        })
    }

    /// A grant's refusal `m`, naming the plugin.
    pub(super) fn denied(&self, m: String) -> Refusal {
        Refusal::Denied(format!("{m} (plugin `{}`)", self.manifest.name))
    }
}

impl Refusal {
    /// A refused statement as the plugin is told it; limits trap (the WIT contract): the guest
    /// cannot catch them and carry on.
    pub(super) fn of(e: QueryError) -> wasmtime::Result<Refusal> {
        match e {
            QueryError::Denied(m) => Ok(Refusal::Denied(m)),
            QueryError::Invalid(m) => Ok(Refusal::InvalidQuery(m)),
            QueryError::Unavailable(m) => Ok(Refusal::Unavailable(m)),
            QueryError::Timeout(m) => Err(wasmtime::Error::new(LimitHit {
                timeout: true,
                message: format!("ran out of database time: {m}"),
            })),
            QueryError::TooLarge(m) => Err(wasmtime::Error::new(LimitHit {
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
    /// The caller's statement slot: one statement at a time per caller, over all their calls;
    /// the wait counts against this call's deadline (past it: a trap).
    pub(super) async fn statement_slot(
        &self,
    ) -> wasmtime::Result<tokio::sync::OwnedSemaphorePermit> {
        let Some(call) = self.call.as_ref() else {
            return Err(super::no_call_in_describe("data.run"));
        };
        let wait = self.deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(wait, call.statements.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            _ => Err(wasmtime::Error::new(LimitHit {
                timeout: true,
                message: "waited past its deadline for the caller's other statements".into(),
            })),
        }
    }

    /// Counts one more query against the manifest's `[limits]` and returns what it may
    /// spend: the least of the database time left, the statement timeout and the call's
    /// own deadline; the rows and bytes left. A spent budget traps.
    pub(super) fn next_allowance(&mut self) -> wasmtime::Result<Allowance> {
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
