//! The plugin host itself (`Plugins`): the engine, the registry of loaded tools, the callers'
//! budgets and metrics, and one call per fresh store with the limits of the plugin's manifest.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use tokio::sync::Semaphore;

use super::callers;
use super::callers::CallerBudgets;
use super::callers::Refusal;
use super::catalog::files::PluginFiles;
use super::catalog::loader;
use super::catalog::loader::LoadError;
use super::catalog::loader::Origin;
use super::catalog::loader::Plugin;
use super::catalog::registry::Registry;
use super::catalog::signature::SignaturePolicy;
use super::limits::MAX_INSTANCES;
use super::options::HostOptions;
use super::output::ToolCallError;
use super::output::ToolOutput;
use super::output::{from_guest, join};
use super::sandbox::engine::PluginEngine;
use super::sandbox::invoke::Failure;
use super::sandbox::invoke::{Answer, Op, Runner, Timing};
use super::sandbox::state::{CallContext, DataUsage};
use super::sandbox::{log_budget, state};
use crate::clock::Clock;
use crate::identity::Identity;

/// Why `call` did not run the tool at all, or how the tool failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// No plugin serves that name.
    #[error("unknown tool `{0}`")]
    UnknownTool(String),
    /// The tool ran (or was refused) and failed.
    #[error(transparent)]
    Tool(#[from] ToolCallError),
    /// The caller's budget refused the call before it ran; retry after this many seconds.
    #[error("{0}")]
    Throttled(Refusal, u64),
}

/// What one tool call used, and which build answered it: made once per call, and recorded
/// once, for the metrics and the audit line together (`mcp::dispatch`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallUsage {
    /// The host's id of the call (`0` when it never ran).
    pub call_id: u64,
    /// SHA-256 of the plugin build that served the tool, when there was one.
    pub digest: Option<String>,
    /// Id of the trusted key that signed that build.
    pub signer: Option<String>,
    /// Where that build came from (the plugin folder or a registry reference, and its digest).
    pub origin: Option<Origin>,
    /// What its `data` queries spent: queries (and those answered from the totals of the
    /// call's cut groups), rows, bytes and database time.
    pub data: DataUsage,
    /// Bytes of the result (0 when there was none).
    pub result_bytes: u64,
    /// Creating the plugin's instance and its run (host imports included), with the stage
    /// marks when the host profiles calls ([`HostOptions::profile_calls`]) and the minor page
    /// faults of the thread it ran on when that was a thread of its own (an interpreter's
    /// plugin, decision 0044).
    pub timing: Timing,
    /// Wall time of the whole call.
    pub duration: std::time::Duration,
}

/// The plugin host: engine, registry, signature policy.
pub struct Plugins {
    runner: Runner,
    registry: Registry,
    policy: SignaturePolicy,
    callers: Arc<CallerBudgets>,
    next_call: AtomicU64,
    metrics: Arc<crate::telemetry::Metrics>,
    calls_audited: bool,
}

impl Plugins {
    /// A host with an empty registry. `cache_dir` holds precompiled components.
    pub fn new(
        cache_dir: Option<PathBuf>,
        policy: SignaturePolicy,
        clock: Clock,
    ) -> anyhow::Result<Arc<Plugins>> {
        Self::with_db(cache_dir, policy, clock, None)
    }

    /// A host whose plugins query `db` through the `data` capability.
    pub fn with_db(
        cache_dir: Option<PathBuf>,
        policy: SignaturePolicy,
        clock: Clock,
        db: Option<crate::data::Db>,
    ) -> anyhow::Result<Arc<Plugins>> {
        let mut options = HostOptions::new(policy, clock);
        options.cache_dir = cache_dir;
        options.db = db;
        Self::with_options(options)
    }

    /// A host set up with `options`.
    pub fn with_options(options: HostOptions) -> anyhow::Result<Arc<Plugins>> {
        let engine = Arc::new(PluginEngine::new(
            options.cache_dir,
            options.cache_key,
            options.cache_max_mib.saturating_mul(1024 * 1024),
            options.compiler,
            options.metrics.clone(),
        )?);
        Ok(Arc::new(Plugins {
            runner: Runner {
                engine,
                permits: Arc::new(Semaphore::new(MAX_INSTANCES as usize)),
                clock: options.clock,
                reports: options
                    .db
                    .map(|db| crate::data::Reports::new(db, options.heavy_queries)),
                memory: state::SharedMemoryBudget::new(options.memory_mib),
                permit_wait: options.permit_wait,
                log_budget: Arc::new(log_budget::LogBudget::new(options.log_lines_per_second)),
                profile: options.profile_calls,
            },
            registry: Registry::default(),
            policy: options.policy,
            callers: CallerBudgets::with_fleet(options.callers, options.fleet),
            next_call: AtomicU64::new(1),
            metrics: options.metrics,
            calls_audited: options.calls_audited,
        }))
    }

    /// The host's metrics.
    pub fn metrics(&self) -> &Arc<crate::telemetry::Metrics> {
        &self.metrics
    }

    /// Heavy-query slots free now (organisation-wide statements; `None` without a database).
    pub fn heavy_slots_free(&self) -> Option<usize> {
        self.runner.reports.as_ref().map(|r| r.heavy_slots_free())
    }

    /// The database of the `data` capability, if any.
    pub fn reports_db(&self) -> Option<&crate::data::Db> {
        self.runner.reports.as_ref().map(|r| &r.db)
    }

    /// Where report statements run (`None` without a data capability).
    pub fn report_store(&self) -> Option<&crate::data::ReportStore> {
        self.runner.reports.as_ref().map(|r| &r.store)
    }

    /// Bytes of linear memory held by live plugin calls.
    pub fn memory_in_use(&self) -> u64 {
        self.runner.memory.in_use()
    }

    /// Instance slots free now.
    pub fn free_slots(&self) -> usize {
        self.runner.permits.available_permits()
    }

    /// The loaded tools.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Swaps `plugin` in (calls in flight finish on the version they started with), records it
    /// as served from `source` (`folder` or a registry reference) at `digest`, and counts the
    /// event; whether it replaced a version. The folder's reloader and the registry follower
    /// both install through here.
    pub(crate) fn install(&self, mut plugin: Plugin, source: &str, digest: &str) -> bool {
        let name = plugin.tool.name.clone();
        plugin.origin = Some(Origin {
            source: source.to_string(),
            digest: digest.to_string(),
        });
        let replaced = self.registry.insert(Arc::new(plugin)).is_some();
        self.metrics().served(&name, Some((source, digest)));
        let event = if replaced { "replaced" } else { "loaded" };
        crate::telemetry::Metrics::count(&self.metrics().plugin_events, event);
        replaced
    }

    /// Loads and checks a plugin exactly as the server does, without registering it.
    pub async fn load(&self, files: &PluginFiles) -> Result<Plugin, LoadError> {
        loader::load(&self.runner, &self.policy, files).await
    }

    /// Calls tool `name` for `caller` with the client's `arguments`.
    pub async fn call(
        &self,
        name: &str,
        caller: &Identity,
        arguments: &Value,
    ) -> Result<Value, CallError> {
        let output = self.call_reported(name, caller, arguments).await.0?;
        output.to_value().map_err(|e| {
            CallError::Tool(ToolCallError::Internal(format!(
                "`{name}` returned a result this host cannot read: {e}"
            )))
        })
    }

    /// Admits one request of `caller` against the caller's budgets: one call now, and what
    /// its ticket is charged when it is dropped (the reply's or the result's bytes, a tool
    /// call's plugin time and memory). A tool call (`tool_call`) also takes one of the caller's
    /// in-flight slots; a request that runs no plugin (a malformed `tools/call`, a list, a
    /// view read) does not. `Err` is the refusal, with its `Retry-After` seconds, when a
    /// budget is spent. The MCP layer calls it once per request (`mcp::dispatch`).
    pub async fn admit(
        &self,
        caller: &Identity,
        tool_call: bool,
    ) -> Result<callers::Ticket, (Refusal, u64)> {
        let admitted = if tool_call {
            self.callers.admit(&caller.user_id).await
        } else {
            self.callers.admit_request(&caller.user_id).await
        };
        admitted.map_err(|refusal| {
            let retry = refusal.retry_after(self.callers.limits());
            (refusal, retry)
        })
    }

    /// As [`Plugins::call`], with the result as the plugin wrote it (checked to be one JSON
    /// object, not parsed into a tree), what the call used and which build answered it; the
    /// call admitted here ([`Plugins::admit`]).
    pub async fn call_reported(
        &self,
        name: &str,
        caller: &Identity,
        arguments: &Value,
    ) -> (Result<ToolOutput, CallError>, CallUsage) {
        match self.admit(caller, true).await {
            Ok(ticket) => self.call_admitted(ticket, name, caller, arguments).await,
            Err((refusal, retry)) => (
                Err(CallError::Throttled(refusal, retry)),
                CallUsage::default(),
            ),
        }
    }

    /// Calls tool `name` for `caller`, admitted with `ticket` ([`Plugins::admit`]), which is
    /// charged the result's bytes and the memory the call was given: the result as the plugin
    /// wrote it (the MCP layer copies it into its answer), what the call used and which
    /// build answered it. A call of an unknown tool has cost its caller a call.
    pub async fn call_admitted(
        &self,
        mut ticket: callers::Ticket,
        name: &str,
        caller: &Identity,
        arguments: &Value,
    ) -> (Result<ToolOutput, CallError>, CallUsage) {
        let started = Instant::now();
        let mut report = CallUsage::default();
        let Some(plugin) = self.registry.get(name) else {
            report.duration = started.elapsed();
            return (Err(CallError::UnknownTool(name.to_string())), report);
        };
        report.digest = Some(plugin.digest.clone());
        report.signer = plugin.signer.clone();
        report.origin = plugin.origin.clone();
        let call_id = self.next_call.fetch_add(1, Ordering::Relaxed);
        report.call_id = call_id;
        let outcome = self
            .call_plugin(
                &plugin,
                caller,
                arguments,
                call_id,
                ticket.statements.clone(),
                &mut report,
            )
            .await;
        if let Ok(output) = &outcome {
            let bytes = output.text().len() as u64;
            ticket.charge_result(bytes);
            report.result_bytes = bytes;
        }
        ticket.charge_memory(self.runner.memory.take_grown(&caller.user_id));
        ticket.charge_time(report.timing.made_ahead.unwrap_or_default());
        drop(ticket);
        report.duration = started.elapsed();
        let code = outcome.as_ref().err().map(|e| e.code()).unwrap_or("ok");
        macro_rules! call_line {
            ($level:ident) => {
                tracing::$level!(
                    tool = name,
                    call_id,
                    user_id = %caller.user_id,
                    digest = %&plugin.digest[..12],
                    micros = report.duration.as_micros() as u64,
                    outcome = code,
                    "tool call"
                )
            };
        }
        // With an audit log the call's record is its audit line; the log repeats it only
        // when asked for `debug`.
        if self.calls_audited {
            call_line!(debug);
        } else {
            call_line!(info);
        }
        (outcome.map_err(CallError::Tool), report)
    }

    /// Runs the plugin for one call; what it used of the `data` capability and how long it
    /// took go into `report`.
    async fn call_plugin(
        &self,
        plugin: &Plugin,
        caller: &Identity,
        arguments: &Value,
        call_id: u64,
        statements: Arc<Semaphore>,
        report: &mut CallUsage,
    ) -> Result<ToolOutput, ToolCallError> {
        let manifest = &plugin.manifest;
        if !caller.has_any(&manifest.roles) {
            return Err(ToolCallError::Forbidden(format!(
                "`{}` requires one of the roles {}; the caller has {}",
                manifest.name,
                join(manifest.roles.iter().map(|r| r.as_str())),
                join(caller.roles.iter().map(|r| r.as_str())),
            )));
        }
        let arguments = match arguments {
            Value::Null => "{}".to_string(),
            Value::Object(_) => arguments.to_string(),
            _ => {
                return Err(ToolCallError::InvalidParams(
                    "arguments must be a JSON object".into(),
                ))
            }
        };
        let call = CallContext {
            identity: caller.clone(),
            call_id,
            statements,
        };
        let (answer, usage, timing) = self
            .runner
            .run_measured(
                &plugin.pre,
                manifest,
                plugin.shape.image_memory,
                Some(call),
                Op::Call(arguments),
                Some(&plugin.spare),
            )
            .await;
        report.data = usage;
        report.timing = timing;
        let text = match answer {
            Ok(Answer::Called(Ok(text))) => text,
            Ok(Answer::Called(Err(e))) => return Err(from_guest(e)),
            Ok(Answer::Described(_)) => unreachable!("a call answers with a result"),
            Err(Failure::Timeout(ms)) => {
                return Err(ToolCallError::Timeout(format!(
                    "`{}` did not finish within {ms} ms",
                    manifest.name
                )))
            }
            Err(f @ (Failure::MemoryLimit(_) | Failure::HostMemory | Failure::Busy(_))) => {
                return Err(ToolCallError::Internal(f.to_string()))
            }
            Err(Failure::Limit(hit)) => {
                let message = format!("`{}` {}", manifest.name, hit.message);
                return Err(if hit.timeout {
                    ToolCallError::Timeout(message)
                } else {
                    ToolCallError::Internal(message)
                });
            }
            Err(Failure::Trap(detail)) => {
                tracing::error!(tool = %manifest.name, call_id, %detail, "plugin trapped");
                return Err(ToolCallError::Internal(format!(
                    "`{}` failed unexpectedly (call {call_id}; details are in the server log)",
                    manifest.name
                )));
            }
        };
        let max = manifest.limits.max_output_bytes;
        if text.len() as u64 > max {
            return Err(ToolCallError::Internal(format!(
                "the result of {} bytes exceeds the plugin's output limit of {max} bytes",
                text.len()
            )));
        }
        ToolOutput::new(text).ok_or_else(|| {
            tracing::error!(tool = %manifest.name, call_id, "plugin returned something other than a JSON object");
            ToolCallError::Internal(format!("`{}` returned a malformed result", manifest.name))
        })
    }
}
