//! Operational metrics in the Prometheus text format: calls by tool and outcome, call latency
//! by stage, instance-pool and database-pool use, token validation failures by reason, JWKS
//! refreshes, plugin loads. One registry per server (so servers in one process, as in tests,
//! do not mix their numbers), rendered by the separate metrics listener
//! (`LOANHOST_METRICS_LISTEN`). Imports nothing of ours.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

/// `tool` and `outcome` of a call.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CallLabels {
    /// The tool asked for.
    pub tool: String,
    /// `ok`, an error code, or why it was refused.
    pub outcome: String,
}

/// The labels of `mcp.server.operation.duration` (OpenTelemetry's MCP conventions, in the
/// Prometheus spelling): empty when not applicable.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct McpLabels {
    /// The JSON-RPC method (`_OTHER` for one the server does not have).
    pub mcp_method_name: String,
    /// The tool of a `tools/call` the server serves.
    pub gen_ai_tool_name: String,
    /// The JSON-RPC error code, `tool_error` for a result with `isError`, else empty.
    pub error_type: String,
    /// The revision the request was answered in.
    pub mcp_protocol_version: String,
    /// `tcp` (MCP over HTTP).
    pub network_transport: String,
}

/// A tool being served: its name, where it came from (`folder`, or the registry reference
/// it follows) and the digest of what is served (the component's, or the artifact's).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ServedLabels {
    /// The tool.
    pub tool: String,
    /// `folder` or an `oci://` reference.
    pub source: String,
    /// `sha256:…` (a folder's component, a registry's artifact).
    pub digest: String,
}

/// One label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Label {
    /// Its value.
    pub kind: String,
}

fn latency() -> Histogram {
    // 50 µs .. ~26 s
    Histogram::new(exponential_buckets(0.000_05, 2.0, 20))
}

/// The server's metrics.
pub struct Metrics {
    registry: Registry,
    /// Tool calls, refused ones included.
    pub calls: Family<CallLabels, Counter>,
    /// Seconds per call, by stage (`kind`): `total`, `instantiate`, `guest`, `database`.
    pub call_seconds: Family<Label, Histogram, fn() -> Histogram>,
    /// Requests refused for their credentials, by reason.
    pub token_failures: Family<Label, Counter>,
    /// JWKS fetches, by result (`ok`, `failed`).
    pub jwks_refreshes: Family<Label, Counter>,
    /// Plugin directory events: `loaded`, `replaced`, `removed`, `refused`.
    pub plugin_events: Family<Label, Counter>,
    /// Components made ready to run, by where their compiled code came from: `cache` (read
    /// back from the compile cache) or `compiled`.
    pub plugin_compilations: Family<Label, Counter>,
    /// Functions of compiled components, by where their machine code came from: `reused`
    /// (the compiled-function cache) or `compiled`; `refused` counts the compiled ones whose
    /// entry in the cache did not verify.
    pub plugin_compiled_functions: Family<Label, Counter>,
    /// Registry references followed, by outcome: `loaded`, `unchanged`, `pulled`, `notice` (a
    /// round started by another host's notice), `cache_mismatch`, and the reasons a round
    /// changed nothing (`unreachable`, `artifact`, `plugin`, `unsigned`, `conflict`).
    pub registry_events: Family<Label, Counter>,
    /// 1 for each tool served, labelled with its source and digest.
    pub plugin_served: Family<ServedLabels, Gauge>,
    /// When each followed reference was last resolved (Unix seconds), by `kind` = reference.
    pub registry_resolved: Family<Label, Gauge>,
    /// Successful resolutions of each followed reference, by `kind` = reference.
    pub registry_resolutions: Family<Label, Counter>,
    /// The resolution (counted as `registry_resolutions`) in which the digest a reference
    /// serves now was taken, by `kind` = reference: how many rounds a change took to follow.
    pub registry_taken_at: Family<Label, Gauge>,
    /// 1 while the follower listens for other hosts' notices (PostgreSQL `LISTEN`).
    pub registry_listening: Gauge,
    served_now: std::sync::Mutex<std::collections::HashMap<String, ServedLabels>>,
    /// Tools being served.
    pub plugins_loaded: Gauge,
    /// Instance slots in use, and all of them.
    pub instance_slots_in_use: Gauge,
    /// All instance slots.
    pub instance_slots: Gauge,
    /// Linear memory held by live plugin calls.
    pub plugin_memory_bytes: Gauge,
    /// Database connections, by `kind`: `identity_open`, `identity_idle`, `reports_open`,
    /// `reports_idle` (the pool of scope lookups), `statements_open`, `statements_idle` (the
    /// connections report statements run on).
    pub db_connections: Family<Label, Gauge>,
    /// Audit lines not written, by reason (`write`, `queue_full`, `stalled`).
    pub audit_failures: Family<Label, Counter>,
    /// Leases of callers' budgets from a fleet's ledger, by outcome (`kind`): `ok`, `lost`
    /// (the ledger could not be read: this host's share granted instead), `share` (granted
    /// from this host's share while the ledger is taken as lost).
    pub fleet_leases: Family<Label, Counter>,
    /// Requests refused by the HTTP layer's limits, by reason (`body_timeout`,
    /// `per_address`, `uploads`, `token_forwards`, `busy`, `authorize_callback`).
    pub http_refusals: Family<Label, Counter>,
    /// Plugins' `data` queries, by what answered them (`kind`): `statement` (compiled and run,
    /// or refused), `call_totals` (the totals of the call's cut groups, without a statement).
    pub data_queries: Family<Label, Counter>,
    /// OpenTelemetry's `mcp.server.operation.duration`: seconds from a JSON-RPC request's
    /// arrival to its answer, rendered without the `loanhost_` prefix as
    /// `mcp_server_operation_duration_seconds` so dashboards built on the conventions find it.
    pub mcp_operation_seconds: Family<McpLabels, Histogram, fn() -> Histogram>,
    /// The series of `call_seconds` for each of [`STAGES`], once first used.
    stage_seconds: [std::sync::OnceLock<Histogram>; 4],
}

/// The stages of every call's `call_seconds`, in the order of [`StageSeconds`]' fields.
const STAGES: [&str; 4] = ["total", "instantiate", "guest", "database"];

/// The seconds of each stage of one call (`loanhost_tool_call_seconds{kind}`).
#[derive(Clone, Copy, Debug, Default)]
pub struct StageSeconds {
    /// The whole call.
    pub total: f64,
    /// Making its instance.
    pub instantiate: f64,
    /// The guest's own run (its database time excluded).
    pub guest: f64,
    /// Its database statements.
    pub database: f64,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut metrics = Metrics {
            registry: Registry::default(),
            calls: Family::default(),
            call_seconds: Family::new_with_constructor(latency),
            token_failures: Family::default(),
            jwks_refreshes: Family::default(),
            plugin_events: Family::default(),
            plugin_compilations: Family::default(),
            plugin_compiled_functions: Family::default(),
            registry_events: Family::default(),
            plugin_served: Family::default(),
            registry_resolved: Family::default(),
            registry_listening: Gauge::default(),
            registry_resolutions: Family::default(),
            registry_taken_at: Family::default(),
            served_now: Default::default(),
            plugins_loaded: Gauge::default(),
            instance_slots_in_use: Gauge::default(),
            instance_slots: Gauge::default(),
            plugin_memory_bytes: Gauge::default(),
            db_connections: Family::default(),
            audit_failures: Family::default(),
            fleet_leases: Family::default(),
            http_refusals: Family::default(),
            data_queries: Family::default(),
            mcp_operation_seconds: Family::new_with_constructor(latency),
            stage_seconds: Default::default(),
        };
        metrics.registry = metrics.registered();
        metrics
    }
}

impl Metrics {
    /// A registry of every metric, in the order they are exposed: the MCP operation's
    /// duration under its conventional name, then the host's own under `loanhost_`.
    fn registered(&self) -> Registry {
        let mut root = Registry::default();
        root.register_with_unit(
            "mcp_server_operation_duration",
            "MCP request duration as observed on the server, from its arrival to its answer",
            prometheus_client::registry::Unit::Seconds,
            self.mcp_operation_seconds.clone(),
        );
        let registry = root.sub_registry_with_prefix("loanhost");
        registry.register(
            "tool_calls",
            "Tool calls by tool and outcome",
            self.calls.clone(),
        );
        registry.register(
            "tool_call_seconds",
            "Seconds per tool call, by stage (total, instantiate, guest, database)",
            self.call_seconds.clone(),
        );
        registry.register(
            "token_failures",
            "Requests refused for their credentials, by reason",
            self.token_failures.clone(),
        );
        registry.register(
            "jwks_refreshes",
            "JWKS fetches by result",
            self.jwks_refreshes.clone(),
        );
        registry.register(
            "plugin_events",
            "Plugin directory events (loaded, replaced, removed, refused)",
            self.plugin_events.clone(),
        );
        registry.register(
            "plugin_compilations",
            "Components made ready to run, by where their compiled code came from (cache, compiled)",
            self.plugin_compilations.clone(),
        );
        registry.register(
            "plugin_compiled_functions",
            "Functions of compiled components, by where their machine code came from (reused, compiled; refused: compiled because the cached entry did not verify)",
            self.plugin_compiled_functions.clone(),
        );
        registry.register(
            "registry_events",
            "Registry references followed, by outcome (loaded, unchanged, pulled) or by why a round changed nothing",
            self.registry_events.clone(),
        );
        registry.register(
            "plugin_served",
            "1 for each tool served, with its source (folder or registry reference) and digest",
            self.plugin_served.clone(),
        );
        registry.register(
            "registry_resolved_timestamp_seconds",
            "When each followed registry reference was last resolved",
            self.registry_resolved.clone(),
        );
        registry.register(
            "registry_resolutions",
            "Successful resolutions of each followed registry reference",
            self.registry_resolutions.clone(),
        );
        registry.register(
            "registry_taken_at_resolution",
            "The resolution (as counted by loanhost_registry_resolutions_total) in which each reference's served digest was taken",
            self.registry_taken_at.clone(),
        );
        registry.register(
            "registry_notices_listening",
            "1 while this host listens for other hosts' registry notices (PostgreSQL LISTEN)",
            self.registry_listening.clone(),
        );
        registry.register(
            "plugins_loaded",
            "Tools being served",
            self.plugins_loaded.clone(),
        );
        registry.register(
            "instance_slots_in_use",
            "Plugin instance slots in use",
            self.instance_slots_in_use.clone(),
        );
        registry.register(
            "instance_slots",
            "Plugin instance slots",
            self.instance_slots.clone(),
        );
        registry.register(
            "plugin_memory_bytes",
            "Linear memory held by live plugin calls",
            self.plugin_memory_bytes.clone(),
        );
        registry.register(
            "db_connections",
            "Database connections by pool and state",
            self.db_connections.clone(),
        );
        registry.register(
            "audit_failures",
            "Audit lines not written, by reason (the call was answered)",
            self.audit_failures.clone(),
        );
        registry.register(
            "fleet_leases",
            "Leases of callers' budgets from the fleet's ledger, by outcome",
            self.fleet_leases.clone(),
        );
        registry.register(
            "http_refusals",
            "Requests refused by the HTTP layer's limits, by reason",
            self.http_refusals.clone(),
        );
        registry.register(
            "data_queries",
            "Plugins' data queries by what answered them (statement, call_totals)",
            self.data_queries.clone(),
        );
        root
    }
}

impl Metrics {
    /// Records that `tool` is served from `source` at `digest` (`None`: no longer served),
    /// replacing what it served before.
    pub fn served(&self, tool: &str, served: Option<(&str, &str)>) {
        let mut now = self.served_now.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(old) = now.remove(tool) {
            self.plugin_served.remove(&old);
        }
        if let Some((source, digest)) = served {
            let labels = ServedLabels {
                tool: tool.to_string(),
                source: source.to_string(),
                digest: digest.to_string(),
            };
            self.plugin_served.get_or_create(&labels).set(1);
            now.insert(tool.to_string(), labels);
        }
    }

    /// Counts a request refused by the HTTP layer's or the OAuth routes' limits
    /// (`loanhost_http_refusals_total`, by reason).
    pub fn refused(&self, reason: &str) {
        Metrics::count(&self.http_refusals, reason);
    }

    /// Counts `kind` in a labelled counter family.
    pub fn count(family: &Family<Label, Counter>, kind: &str) {
        Metrics::count_by(family, kind, 1);
    }

    /// Counts `n` of `kind` in a labelled counter family.
    pub fn count_by(family: &Family<Label, Counter>, kind: &str, n: u64) {
        family
            .get_or_create(&Label {
                kind: kind.to_string(),
            })
            .inc_by(n);
    }

    /// Records one call: its outcome and the seconds of each stage. Each stage's series is
    /// looked up once, on its first use, and kept.
    pub fn call(&self, tool: &str, outcome: &str, seconds: &StageSeconds) {
        self.calls
            .get_or_create(&CallLabels {
                tool: tool.to_string(),
                outcome: outcome.to_string(),
            })
            .inc();
        let StageSeconds {
            total,
            instantiate,
            guest,
            database,
        } = *seconds;
        let each = [total, instantiate, guest, database];
        for ((series, kind), seconds) in self.stage_seconds.iter().zip(STAGES).zip(each) {
            series
                .get_or_init(|| {
                    self.call_seconds
                        .get_or_create(&Label { kind: kind.into() })
                        .clone()
                })
                .observe(seconds);
        }
    }

    /// Counts one call's `data` queries: `from_totals` of its `queries` were answered from
    /// the totals of its cut groups, the others by a statement (or refused).
    pub fn data_queries(&self, queries: u32, from_totals: u32) {
        for (kind, n) in [
            ("statement", queries.saturating_sub(from_totals)),
            ("call_totals", from_totals),
        ] {
            if n > 0 {
                self.data_queries
                    .get_or_create(&Label { kind: kind.into() })
                    .inc_by(n.into());
            }
        }
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_the_text_format_with_labels() {
        let m = Metrics::default();
        m.call(
            "report_loans",
            "ok",
            &StageSeconds {
                total: 0.01,
                instantiate: 0.0001,
                guest: 0.001,
                database: 0.008,
            },
        );
        Metrics::count(&m.token_failures, "expired");
        m.instance_slots.set(64);
        let text = m.render();
        assert!(
            text.contains("loanhost_tool_calls_total{tool=\"report_loans\",outcome=\"ok\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("loanhost_tool_call_seconds_count{kind=\"total\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("loanhost_token_failures_total{kind=\"expired\"} 1"),
            "{text}"
        );
        assert!(text.contains("loanhost_instance_slots 64"), "{text}");
        assert!(text.ends_with("# EOF\n"));
    }
}
