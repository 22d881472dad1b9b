//! What a request leaves behind, once: a tool call's metrics and audit line, whether `/mcp`
//! or a REST path made it; and the REST paths' own admission and audit (a REST request is
//! charged to its caller's budgets and audited as a `tools/call` is, its line naming the
//! route's template, never the values in the path).

use serde_json::Value;

use super::dispatch::Dispatcher;
use crate::audit::{self, summarize, AuditEntry};
use crate::identity::Identity;
use crate::plugins::callers::{Refusal, Ticket};
use crate::plugins::{CallError, CallUsage, ToolCallError};
use crate::telemetry::{Metrics, StageSeconds};

/// Where a request came from: `/mcp` with its JSON-RPC id, or a REST route (its template).
#[derive(Debug, Clone, Copy)]
pub(super) enum Via<'a> {
    /// A JSON-RPC request with this id.
    Mcp(&'a Value),
    /// A REST path of this template.
    Rest(&'a str),
}

/// The audit and metrics code of a call's outcome.
pub(super) fn outcome_code<T>(outcome: &Result<T, CallError>) -> &'static str {
    match outcome {
        Ok(_) => "ok",
        Err(CallError::UnknownTool(_)) => "unknown_tool",
        Err(CallError::Throttled(..)) => "rate_limited",
        Err(CallError::Tool(e)) => e.code(),
    }
}

impl Dispatcher {
    /// Calls `tool` for the REST path `route` (its template, e.g. `GET /api/loan-applications/{id}`):
    /// admitted and charged once, measured and audited as a `tools/call` of it is (the line
    /// names the route); the result as the plugin wrote it, parsed.
    pub async fn call_for_rest(
        &self,
        caller: &Identity,
        route: &str,
        tool: &str,
        arguments: &Value,
    ) -> Result<Value, CallError> {
        let (outcome, usage) = self.plugins.call_reported(tool, caller, arguments).await;
        let code = outcome_code(&outcome);
        self.record(caller, Via::Rest(route), tool, arguments, code, &usage)
            .await;
        outcome?.to_value().map_err(|e| {
            CallError::Tool(ToolCallError::Internal(format!(
                "`{tool}` returned a result this host cannot read: {e}"
            )))
        })
    }

    /// Admits a REST request that runs no plugin (charged one call, and its reply's bytes
    /// through the ticket), or the refusal with its `Retry-After` seconds, audited as refused.
    pub async fn admit_rest(
        &self,
        caller: &Identity,
        route: &str,
    ) -> Result<Ticket, (Refusal, u64)> {
        let admitted = self.plugins.admit(caller, false).await;
        if admitted.is_err() {
            self.audit_rest(caller, route, "rate_limited", 0).await;
        }
        admitted
    }

    /// The audit line of a REST request that runs no plugin: its route, outcome and reply's
    /// bytes.
    pub async fn audit_rest(&self, caller: &Identity, route: &str, outcome: &str, bytes: u64) {
        let usage = CallUsage {
            result_bytes: bytes,
            ..CallUsage::default()
        };
        self.audit(
            caller,
            Via::Rest(route),
            None,
            &Value::Null,
            outcome,
            &usage,
        )
        .await;
    }

    /// Records what a call used, once: its metrics (by tool and outcome: the call's total,
    /// instantiation, guest and database time; its queries) and its audit line.
    pub(super) async fn record(
        &self,
        caller: &Identity,
        via: Via<'_>,
        name: &str,
        arguments: &Value,
        code: &str,
        usage: &CallUsage,
    ) {
        self.audit(caller, via, Some(name), arguments, code, usage)
            .await;
        let secs = |d: std::time::Duration| d.as_secs_f64();
        let timing = &usage.timing;
        self.metrics.call(
            if usage.digest.is_some() {
                name
            } else {
                "(unknown)"
            },
            code,
            &StageSeconds {
                total: secs(usage.duration),
                instantiate: secs(timing.instantiate),
                guest: secs(timing.run.saturating_sub(usage.data.db_time)),
                database: secs(usage.data.db_time),
            },
        );
        self.metrics
            .data_queries(usage.data.queries, usage.data.from_totals);
    }

    /// Writes the audit line of a call; a line not written is logged and counted, and the
    /// answer is sent all the same (`docs/threat-model.md`, "The audit trail").
    pub(super) async fn audit(
        &self,
        caller: &Identity,
        via: Via<'_>,
        tool: Option<&str>,
        arguments: &Value,
        outcome: &str,
        report: &CallUsage,
    ) {
        let (request_id, route) = match via {
            Via::Mcp(id) => (audit::bounded_id(id), None),
            Via::Rest(route) => (Value::Null, Some(route)),
        };
        if !self.audit.is_on() {
            return;
        }
        let plugin = tool.and_then(|t| self.plugins.registry().get(t));
        let schema = plugin
            .as_ref()
            .map_or(&Value::Null, |p| &p.tool.input_schema);
        let written = self
            .audit
            .record(&AuditEntry {
                time: AuditEntry::now(),
                request_id,
                call_id: report.call_id,
                user_id: &caller.user_id,
                roles: caller.roles.iter().map(|r| r.as_str()).collect(),
                tool: tool.map(audit::bounded),
                plugin_digest: report.digest.as_deref(),
                plugin_source: report.origin.as_ref().map(|o| o.source.as_str()),
                artifact_digest: report.origin.as_ref().map(|o| o.digest.as_str()),
                signer_key_id: report.signer.as_deref(),
                outcome,
                duration_ms: report.duration.as_secs_f64() * 1000.0,
                db_time_ms: report.data.db_time.as_secs_f64() * 1000.0,
                queries: report.data.queries,
                rows_read: report.data.rows,
                rows_listed: report.data.listed,
                loans_listed: &report.data.listed_loans,
                people_found: report.data.people,
                result_bytes: report.result_bytes,
                arguments: summarize(arguments, schema),
                route,
            })
            .await;
        if let Err(e) = written {
            tracing::error!(error = %e, call_id = report.call_id, user_id = %caller.user_id, "audit line not written; the call is answered");
            Metrics::count(&self.metrics.audit_failures, e.label());
        }
    }
}
