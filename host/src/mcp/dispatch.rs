//! MCP method dispatch: `initialize`, `ping`, `tools/list`, `tools/call` and the `resources/*`
//! methods of the plugins' views for the handshake-era revisions; `server/discover` and the
//! same tool and resource methods for 2026-07-28. Tool names map to plugins through the
//! registry; the caller comes from the authenticated identity only.

use std::sync::Arc;

use serde_json::{json, Value};

use super::accounting::Via;
use super::modern;
use super::protocol::{
    object, object_params, Reply, RpcError, INVALID_PARAMS, METHOD_NOT_FOUND, RATE_LIMITED,
    SUPPORTED_VERSIONS,
};
use super::request::{call_params, Method, Request};
use super::resources;
use crate::audit::{self, AuditLog};
use crate::config::ToolsList;
use crate::identity::Identity;
use crate::plugins::callers::Refusal;
use crate::plugins::callers::Ticket;
use crate::plugins::{CallError, CallUsage, Plugins};
use crate::telemetry::Metrics;

/// Which revision's methods a request is answered with: the handshake-era revisions
/// (2025-03-26 to 2025-11-25, `initialize` first) or 2026-07-28 (no handshake; every request
/// carries its version and capabilities in `_meta`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revision {
    /// 2025-03-26, 2025-06-18 and 2025-11-25.
    Handshake,
    /// 2026-07-28.
    Modern,
}

/// Answers MCP requests for an authenticated caller.
#[derive(Clone)]
pub struct Dispatcher {
    pub(super) plugins: Arc<Plugins>,
    pub(super) audit: Arc<AuditLog>,
    pub(super) metrics: Arc<Metrics>,
    max_batch: usize,
    tools_list: ToolsList,
}

const INSTRUCTIONS: &str = "Loan reporting tools for a mortgage platform. Every answer is an \
aggregate scoped to the signed-in user's role; tools never take a user id. Call \
get_loan_reporting_metadata first for valid filter and grouping values. An empty result usually \
means the caller's scope, not an error.";

impl Dispatcher {
    /// A dispatcher over the plugin host, counting its calls in `metrics`, answering
    /// batches of at most `max_batch` messages.
    pub fn new(plugins: Arc<Plugins>, metrics: Arc<Metrics>, max_batch: usize) -> Self {
        Dispatcher {
            plugins,
            audit: Arc::new(AuditLog::off()),
            metrics,
            max_batch,
            tools_list: ToolsList::All,
        }
    }

    /// The same dispatcher writing an audit line for every `tools/call`.
    pub fn with_audit(mut self, audit: Arc<AuditLog>) -> Self {
        self.audit = audit;
        self
    }

    /// The same dispatcher listing tools as `tools_list` says (`LOANHOST_TOOLS_LIST`).
    pub fn with_tools_list(mut self, tools_list: ToolsList) -> Self {
        self.tools_list = tools_list;
        self
    }

    /// Whether `caller` is shown `plugin` in `tools/list` (and may name it in `tools/call`):
    /// every plugin, or with [`ToolsList::Callable`] those the caller's roles may call.
    fn shows(&self, caller: &Identity, plugin: &crate::plugins::Plugin) -> bool {
        self.tools_list == ToolsList::All || caller.has_any(&plugin.manifest.roles)
    }

    /// Handles one request of `revision` (`Dispatcher::answer`), its result shaped as the
    /// revision has it (2026-07-28: `resultType`, the server's identity and caching hints,
    /// after the reply's bytes are charged, as before).
    pub async fn request(
        &self,
        caller: &Identity,
        request: Request,
        revision: Revision,
    ) -> Result<Reply, RpcError> {
        let modern = (revision == Revision::Modern).then(|| request.method.clone());
        let reply = self.answer(caller, request, revision).await?;
        Ok(match modern {
            Some(method) => modern::decorate(method.as_str(), reply),
            None => reply,
        })
    }

    /// Answers one request of `revision`: one table of methods for every revision, and one
    /// tool-call path. The handshake-era revisions have `initialize` and `ping`, and check
    /// that a list's params are an object; 2026-07-28 (its envelope already validated) has
    /// `server/discover` instead, and names views in `tools/list` only to a client whose
    /// request declares the MCP Apps extension.
    async fn answer(
        &self,
        caller: &Identity,
        request: Request,
        revision: Revision,
    ) -> Result<Reply, RpcError> {
        let Request { id, method, params } = request;
        if method == Method::ToolsCall {
            return self.call_tool(caller, &id, params).await;
        }
        let handshake = revision == Revision::Handshake;
        self.charged(caller, method.as_str(), || match &method {
            Method::Initialize if handshake => initialize(params).map(Reply::from),
            Method::Ping if handshake => Ok(json!({}).into()),
            Method::ServerDiscover if !handshake => Ok(json!({
                "supportedVersions": modern::all_versions(),
                "capabilities": resources::capabilities(),
                "instructions": INSTRUCTIONS,
            })
            .into()),
            Method::ToolsList => {
                // A handshake-era request carries no capabilities and there is no session:
                // whether the client declared the MCP Apps extension at `initialize` is not
                // known here, so every view is named (an unknown `_meta` key is ignored by
                // clients without the extension). A 2026-07-28 request carries the client's.
                let views = if handshake {
                    object_params(params)?;
                    true
                } else {
                    resources::client_renders_views(params.as_ref())
                };
                Ok(self.list_tools(caller, views).into())
            }
            Method::ResourcesList => {
                if handshake {
                    object_params(params)?;
                }
                Ok(resources::list(self.plugins.registry(), caller).into())
            }
            Method::ResourcesTemplatesList => {
                if handshake {
                    object_params(params)?;
                }
                Ok(resources::templates().into())
            }
            Method::ResourcesRead => resources::read(self.plugins.registry(), caller, params),
            other if handshake => Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!("Method not found: {}", other.as_str()),
            )),
            other => Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!(
                    "Method not found: {} (protocol version {})",
                    other.as_str(),
                    modern::MODERN_VERSION
                ),
            )),
        })
        .await
    }

    /// The metrics the dispatcher counts in.
    pub(super) fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The most messages a batch may hold.
    pub(super) fn max_batch(&self) -> usize {
        self.max_batch
    }

    /// Whether a tool of this name is served now.
    pub(super) fn serves(&self, tool: &str) -> bool {
        self.plugins.registry().get(tool).is_some()
    }

    /// The one place where a request is admitted and charged to its caller, once: one call
    /// of the calls-per-minute budget before it is answered (refused `-32050` once a budget
    /// is spent, with its `Retry-After`), and, through the ticket, what it cost: a tool call's
    /// plugin time, memory and result bytes (charged by the plugin host), or a reply's bytes
    /// for a request that runs no plugin, shared bytes (a view) included. So a view read
    /// costs what a tool result of its size costs, and a batch of them runs out of budget as
    /// calls do. `what` names the method or tool in the log.
    async fn admit(
        &self,
        caller: &Identity,
        what: &str,
        tool_call: bool,
    ) -> Result<Ticket, (Refusal, u64)> {
        self.plugins.admit(caller, tool_call).await.inspect_err(|(refusal, _)| {
            tracing::info!(request = ?audit::bounded(what), tool_call, user_id = %caller.user_id, %refusal, "request refused by the caller's budget");
        })
    }

    /// Answers a request that runs no plugin, admitted and charged by [`Dispatcher::admit`].
    async fn charged(
        &self,
        caller: &Identity,
        method: &str,
        answer: impl FnOnce() -> Result<Reply, RpcError>,
    ) -> Result<Reply, RpcError> {
        let mut ticket = self
            .admit(caller, method, false)
            .await
            .map_err(|(refusal, retry)| throttled_error(&refusal, retry))?;
        let reply = answer()?;
        ticket.charge_result(reply.encoded_len() as u64);
        Ok(reply)
    }

    /// Every tool the caller is shown ([`Dispatcher::shows`]), in name order; with `views`, a
    /// tool whose view the caller may see names it in `_meta`.
    fn list_tools(&self, caller: &Identity, views: bool) -> Value {
        let tools: Vec<Value> = self
            .plugins
            .registry()
            .snapshot()
            .values()
            .filter(|p| self.shows(caller, p))
            .map(|p| {
                let t = &p.tool;
                let mut tool = json!({
                    "name": t.name,
                    "title": t.title,
                    "description": t.description,
                    "inputSchema": t.input_schema,
                    "outputSchema": t.output_schema,
                    "annotations": annotations(&t.title),
                });
                if let Some(meta) = views.then(|| resources::tool_meta(p, caller)).flatten() {
                    tool["_meta"] = meta;
                }
                tool
            })
            .collect();
        json!({ "tools": tools })
    }

    /// Calls a tool and writes its audit line (refusals included) before answering. The
    /// result's text goes into `content` and, as the plugin wrote it, `structuredContent`.
    /// A malformed call and a call of an unknown tool are charged to the caller's budget like
    /// any other (a flood of them is refused `429`).
    async fn call_tool(
        &self,
        caller: &Identity,
        id: &Value,
        params: Option<Value>,
    ) -> Result<Reply, RpcError> {
        let _under_way = self.audit.call_begins();
        let (name, arguments) = match call_params(params) {
            Ok(p) => p,
            Err((name, e)) => {
                let (e, outcome) = match self.admit(caller, "tools/call", false).await {
                    Ok(_ticket) => (e, "invalid_request"),
                    Err((refusal, retry)) => (throttled_error(&refusal, retry), "rate_limited"),
                };
                self.audit(
                    caller,
                    Via::Mcp(id),
                    name.as_deref(),
                    &Value::Null,
                    outcome,
                    &CallUsage::default(),
                )
                .await;
                return Err(e);
            }
        };
        let hidden = self
            .plugins
            .registry()
            .get(&name)
            .is_some_and(|p| !self.shows(caller, &p));
        let (outcome, usage) = match self.admit(caller, &name, true).await {
            // A tool the caller is not shown answers as an unknown one, at the same cost.
            Ok(_ticket) if hidden => (
                Err(CallError::UnknownTool(name.clone())),
                CallUsage::default(),
            ),
            Ok(ticket) => {
                // In the request's `mcp.server` span, which names the tool.
                self.plugins
                    .call_admitted(ticket, &name, caller, &arguments)
                    .await
            }
            Err((refusal, retry)) => (
                Err(CallError::Throttled(refusal, retry)),
                CallUsage::default(),
            ),
        };
        let code = super::accounting::outcome_code(&outcome);
        self.record(caller, Via::Mcp(id), &name, &arguments, code, &usage)
            .await;
        match outcome {
            Ok(output) => Ok(Reply {
                value: object([
                    (
                        "content",
                        Value::Array(vec![object([
                            ("type", Value::from("text")),
                            ("text", Value::from(output.text())),
                        ])]),
                    ),
                    ("isError", Value::Bool(false)),
                ]),
                structured: Some(output.into_raw()),
                ..Reply::default()
            }),
            Err(CallError::UnknownTool(n)) => Err(RpcError::new(
                INVALID_PARAMS,
                format!("Unknown tool: {}", audit::bounded(&n)),
            )),
            Err(CallError::Throttled(refusal, retry)) => Err(throttled_error(&refusal, retry)),
            Err(CallError::Tool(e)) => Ok(json!({
                "content": [{"type": "text", "text": e.to_string()}],
                "isError": true,
            })
            .into()),
        }
    }
}

/// The `-32050` error of a call refused for its caller's budget.
pub(super) fn throttled_error(refusal: &Refusal, retry: u64) -> RpcError {
    RpcError::retry_later(
        RATE_LIMITED,
        format!("{refusal}; retry after {retry} s"),
        retry,
    )
}

/// A tool's annotations (MCP 2025-03-26 on; the same on every revision served): its title
/// from the plugin's own description, and the hints that the sandbox makes facts for every
/// plugin rather than claims of one: the WIT world's only data capability reads within the
/// caller's scope (read-only, so nothing to destroy and calling again changes nothing) and a
/// plugin reaches nothing outside the host (closed world).
pub fn annotations(title: &str) -> Value {
    json!({
        "title": title,
        "readOnlyHint": true,
        "destructiveHint": false,
        "idempotentHint": true,
        "openWorldHint": false,
    })
}

fn initialize(params: Option<Value>) -> Result<Value, RpcError> {
    let params = object_params(params)?;
    let requested = match params.get("protocolVersion") {
        Some(Value::String(v)) => v.as_str(),
        Some(_) => {
            return Err(RpcError::new(
                INVALID_PARAMS,
                "`protocolVersion` must be a string",
            ))
        }
        None => {
            return Err(RpcError::new(
                INVALID_PARAMS,
                "`protocolVersion` is required",
            ))
        }
    };
    // Answer with the client's version when we speak it, else our newest.
    let version = SUPPORTED_VERSIONS
        .iter()
        .find(|v| **v == requested)
        .unwrap_or(&SUPPORTED_VERSIONS[0]);
    Ok(json!({
        "protocolVersion": version,
        "capabilities": resources::capabilities(),
        "serverInfo": modern::server_info(),
        "instructions": INSTRUCTIONS,
    }))
}
