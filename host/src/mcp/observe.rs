//! OpenTelemetry's semantic conventions for MCP (`docs/gen-ai/mcp.md` of the conventions): one
//! `SERVER` span per JSON-RPC request, named `{mcp.method.name} {gen_ai.tool.name}` for a tool
//! call and `{mcp.method.name}` otherwise, with the conventions' attributes; its parent is the
//! trace context the client put in `params._meta` (`traceparent`, `tracestate`), linked to the
//! HTTP request's span; `error.type` is the JSON-RPC error code, or `tool_error` for a result
//! with `isError`; and the `mcp.server.operation.duration` histogram with the same labels.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::TraceContextExt as _;
use serde_json::Value;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use super::protocol::{Reply, RpcError};
use super::request::Method;
use crate::telemetry::{McpLabels, Metrics};

/// Whether spans are exported (set once, by the process's tracing set-up, when an OTLP endpoint
/// is configured): a request's span then carries every attribute of the conventions.
static SPANS_EXPORTED: AtomicBool = AtomicBool::new(false);

/// Marks spans as exported (see [`Operation::start`]); called once, when the exporter is set up.
pub fn export_spans() {
    SPANS_EXPORTED.store(true, Ordering::Relaxed);
}

fn spans_exported() -> bool {
    SPANS_EXPORTED.load(Ordering::Relaxed)
}

/// The span's name as the conventions spell it, `{mcp.method.name} {gen_ai.tool.name}`,
/// written without building a string.
struct SpanName<'a>(&'a str, Option<&'a str>);

impl std::fmt::Display for SpanName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.1 {
            Some(tool) => write!(f, "{} {tool}", self.0),
            None => f.write_str(self.0),
        }
    }
}

/// One request being answered: its span and when it started.
pub struct Operation {
    span: tracing::Span,
    started: Instant,
    labels: McpLabels,
}

impl Operation {
    /// Starts the span of a request for `method` with `id` on `version` (the revision the
    /// request was answered in); `tool` is the tool a `tools/call` names when it is one the
    /// server serves (another name is `_OTHER`).
    pub fn start(
        method: &str,
        id: &Value,
        params: Option<&Value>,
        version: &str,
        tool: Option<&str>,
    ) -> Operation {
        // The methods this server knows are named as they are; any other is `_OTHER` (a
        // client chooses the method, and names from clients must not grow the metric's label
        // set without bound).
        let method = if Method::known(method).is_some() {
            method
        } else {
            "_OTHER"
        };
        let request_id = match id {
            Value::String(s) => Some(crate::audit::bounded(s).into_owned()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        };
        let exported = spans_exported();
        let span = if exported {
            tracing::info_span!(
                "mcp.server",
                otel.name = %SpanName(method, tool),
                otel.kind = "server",
                otel.status_code = Empty,
                otel.status_description = Empty,
                mcp.method.name = %method,
                mcp.protocol.version = %version,
                jsonrpc.request.id = request_id.as_deref(),
                gen_ai.tool.name = tool,
                gen_ai.operation.name = tool.map(|_| "execute_tool"),
                mcp.resource.uri = Empty,
                network.transport = "tcp",
                network.protocol.name = "http",
                error.type = Empty,
                rpc.response.status_code = Empty,
            )
        } else {
            // Nothing exports the span: it only gives the log lines written inside it their
            // request, so it carries what a reader of the log needs and none of the
            // conventions' constant attributes (each field is formatted for the log as the
            // span is made, on every request).
            tracing::info_span!(
                "mcp.server",
                mcp.method.name = %method,
                jsonrpc.request.id = request_id.as_deref(),
                gen_ai.tool.name = tool,
                mcp.resource.uri = Empty,
            )
        };
        if method == "resources/read" {
            if let Some(uri) = params.and_then(|p| p["uri"].as_str()) {
                span.record("mcp.resource.uri", &*crate::audit::bounded(uri));
            }
        }
        // Only an exporter reads the trace context; without one, `_meta` is not parsed for it.
        let parent = if exported {
            remote_parent(params)
        } else {
            None
        };
        if let Some(parent) = parent {
            // The HTTP request's span stays reachable as a link (the conventions: MCP and
            // transport contexts are independent).
            let ambient = tracing::Span::current()
                .context()
                .span()
                .span_context()
                .clone();
            let _ = span.set_parent(parent);
            if ambient.is_valid() {
                span.add_link(ambient);
            }
        }
        Operation {
            span,
            started: Instant::now(),
            labels: McpLabels {
                mcp_method_name: method.to_string(),
                gen_ai_tool_name: tool.unwrap_or_default().to_string(),
                error_type: String::new(),
                mcp_protocol_version: version.to_string(),
                network_transport: "tcp".into(),
            },
        }
    }

    /// The span, to run the request in.
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// Records the outcome on the span and the duration in `metrics`.
    pub fn finish(mut self, outcome: &Result<Reply, RpcError>, metrics: &Metrics) {
        let failure = match outcome {
            Err(e) => Some((e.code.to_string(), e.message.clone())),
            Ok(reply) if reply.value["isError"] == Value::Bool(true) => Some((
                "tool_error".to_string(),
                "the tool answered an error".into(),
            )),
            Ok(_) => None,
        };
        if let Some((kind, message)) = failure {
            if let Err(e) = outcome {
                self.span
                    .record("rpc.response.status_code", e.code.to_string().as_str());
            }
            self.span.record("error.type", kind.as_str());
            self.span.record("otel.status_code", "ERROR");
            self.span
                .record("otel.status_description", message.as_str());
            self.labels.error_type = kind;
        }
        metrics
            .mcp_operation_seconds
            .get_or_create(&self.labels)
            .observe(self.started.elapsed().as_secs_f64());
    }
}

/// The trace context a client sent in `params._meta` (W3C `traceparent` and `tracestate`,
/// unprefixed, as SEP-414 and the conventions say), if it holds a valid one.
fn remote_parent(params: Option<&Value>) -> Option<opentelemetry::Context> {
    let meta = params?.get("_meta")?.as_object()?;
    let traceparent = meta.get("traceparent")?.as_str()?;
    let mut carrier = HashMap::new();
    carrier.insert("traceparent".to_string(), traceparent.to_string());
    if let Some(state) = meta.get("tracestate").and_then(Value::as_str) {
        carrier.insert("tracestate".to_string(), state.to_string());
    }
    let cx = opentelemetry_sdk::propagation::TraceContextPropagator::new().extract(&carrier);
    cx.span().span_context().is_valid().then_some(cx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_traceparent_in_meta_is_the_parent_and_others_are_ignored() {
        let params = serde_json::json!({"_meta": {
            "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "tracestate": "rojo=00f067aa0ba902b7"
        }});
        let cx = remote_parent(Some(&params)).expect("a parent");
        let parent = cx.span().span_context().clone();
        assert_eq!(
            parent.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(parent.span_id().to_string(), "00f067aa0ba902b7");
        assert!(parent.is_remote());
        for bad in [
            serde_json::json!({"_meta": {"traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-01"}}),
            serde_json::json!({"_meta": {"traceparent": "not a traceparent"}}),
            serde_json::json!({"_meta": {"traceparent": 7}}),
            serde_json::json!({"_meta": {}}),
            serde_json::json!({}),
        ] {
            assert!(remote_parent(Some(&bad)).is_none(), "{bad}");
        }
    }

    /// The field names of every `mcp.server` span made while `run` runs.
    fn span_fields(run: impl FnOnce()) -> Vec<Vec<String>> {
        use std::sync::{Arc, Mutex};
        use tracing_subscriber::layer::{Context, SubscriberExt as _};
        struct Fields(Arc<Mutex<Vec<Vec<String>>>>);
        impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Fields {
            fn on_new_span(
                &self,
                attrs: &tracing::span::Attributes<'_>,
                _: &tracing::span::Id,
                _: Context<'_, S>,
            ) {
                struct Names(Vec<String>);
                impl tracing::field::Visit for Names {
                    fn record_debug(&mut self, f: &tracing::field::Field, _: &dyn std::fmt::Debug) {
                        self.0.push(f.name().to_string());
                    }
                }
                let mut names = Names(Vec::new());
                attrs.record(&mut names);
                if attrs.metadata().name() == "mcp.server" {
                    self.0.lock().unwrap().push(names.0);
                }
            }
        }
        let seen = Arc::new(Mutex::new(Vec::new()));
        let subscriber = tracing_subscriber::registry().with(Fields(seen.clone()));
        tracing::subscriber::with_default(subscriber, run);
        let fields = seen.lock().unwrap().clone();
        fields
    }

    #[test]
    fn a_span_carries_the_conventions_attributes_only_when_it_is_exported() {
        // Arrange
        let start = || {
            Operation::start(
                "tools/call",
                &serde_json::json!(7),
                None,
                "2026-07-28",
                Some("report_loans"),
            )
        };
        // Act: before and after the exporter is set up (the flag is the process's: only
        // this test sets it).
        let logged = span_fields(|| drop(start()));
        export_spans();
        let exported = span_fields(|| drop(start()));
        // Assert: what a log reader needs either way, set as the span is made.
        for names in [&logged[0], &exported[0]] {
            for name in ["mcp.method.name", "jsonrpc.request.id", "gen_ai.tool.name"] {
                assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
            }
        }
        for name in [
            "otel.name",
            "otel.kind",
            "network.transport",
            "mcp.protocol.version",
        ] {
            assert!(!logged[0].iter().any(|n| n == name), "{name} in {logged:?}");
            assert!(
                exported[0].iter().any(|n| n == name),
                "{name} in {exported:?}"
            );
        }
    }

    #[test]
    fn the_duration_is_recorded_with_the_conventions_labels_and_the_error_type() {
        let metrics = Metrics::default();
        let ok = Operation::start(
            "tools/call",
            &serde_json::json!(1),
            None,
            "2025-11-25",
            Some("report_loans"),
        );
        ok.finish(&Ok(serde_json::json!({"isError": false}).into()), &metrics);
        let tool_error = Operation::start(
            "tools/call",
            &serde_json::json!(2),
            None,
            "2026-07-28",
            Some("report_loans"),
        );
        tool_error.finish(&Ok(serde_json::json!({"isError": true}).into()), &metrics);
        let unknown = Operation::start(
            "evil/method",
            &serde_json::json!("x"),
            None,
            "2025-11-25",
            None,
        );
        unknown.finish(&Err(RpcError::new(-32601, "Method not found")), &metrics);
        let text = metrics.render();
        assert!(
            text.contains(
                "mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"report_loans\",error_type=\"\",mcp_protocol_version=\"2025-11-25\",network_transport=\"tcp\"} 1"
            ),
            "{text}"
        );
        assert!(
            text.contains("error_type=\"tool_error\",mcp_protocol_version=\"2026-07-28\""),
            "{text}"
        );
        assert!(
            text.contains("mcp_method_name=\"_OTHER\",gen_ai_tool_name=\"\",error_type=\"-32601\""),
            "{text}"
        );
        assert!(!text.contains("evil"), "{text}");
    }
}
