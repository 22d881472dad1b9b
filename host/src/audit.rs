//! The audit log: one JSON line per `tools/call`, refused calls included, written and flushed
//! before the response is sent, to a file or stdout (`LOANHOST_AUDIT_LOG`). It says who ran
//! which tool, on which plugin build, over how much data, and what came back, and never holds a
//! token, an email, or an argument value that may be personal data: arguments are recorded by
//! name, with values only for fields whose schema enumerates them. Imports nothing of ours.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Mutex;

use serde::Serialize;
use serde_json::{Map, Value};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// Where audit lines go.
enum Sink {
    Off,
    Stdout,
    File(Mutex<std::fs::File>),
}

/// The audit log of a server.
pub struct AuditLog {
    sink: Sink,
}

impl AuditLog {
    /// From `LOANHOST_AUDIT_LOG`: `off`, `stdout`, or a file path (appended to, created with
    /// mode 0600 when new).
    pub fn open(setting: &str) -> Result<AuditLog, String> {
        let sink = match setting.trim() {
            "off" => Sink::Off,
            "stdout" | "-" => Sink::Stdout,
            path => {
                let mut options = std::fs::OpenOptions::new();
                options.create(true).append(true);
                #[cfg(unix)]
                std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
                let file = options
                    .open(path)
                    .map_err(|e| format!("cannot open {path} for appending: {e}"))?;
                Sink::File(Mutex::new(file))
            }
        };
        Ok(AuditLog { sink })
    }

    /// No audit log.
    pub fn off() -> AuditLog {
        AuditLog { sink: Sink::Off }
    }

    /// Whether entries are written anywhere (callers skip building them when not).
    pub fn is_on(&self) -> bool {
        !matches!(self.sink, Sink::Off)
    }

    /// Writes one entry as a JSON line and flushes it. A write that fails is logged (the call
    /// has already run; its answer is not withheld).
    pub fn record(&self, entry: &AuditEntry<'_>) {
        if matches!(self.sink, Sink::Off) {
            return;
        }
        let mut line = match serde_json::to_vec(entry) {
            Ok(l) => l,
            Err(e) => {
                tracing::error!(error = %e, "cannot serialize an audit entry");
                return;
            }
        };
        line.push(b'\n');
        let written = match &self.sink {
            Sink::Off => Ok(()),
            Sink::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(&line).and_then(|_| out.flush())
            }
            Sink::File(f) => {
                let mut f = f.lock().unwrap_or_else(|e| e.into_inner());
                f.write_all(&line).and_then(|_| f.flush())
            }
        };
        if let Err(e) = written {
            tracing::error!(error = %e, "cannot write the audit log");
        }
    }
}

/// One audited call.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry<'a> {
    /// When the call ended (RFC 3339, UTC).
    pub time: String,
    /// The JSON-RPC id of the request.
    pub request_id: &'a Value,
    /// The host's id of the call (`0` when it never ran); joins the server log.
    pub call_id: u64,
    /// The caller's platform user id.
    pub user_id: &'a str,
    /// The caller's role codes.
    pub roles: Vec<&'a str>,
    /// The tool asked for (`null` when the request named none).
    pub tool: Option<&'a str>,
    /// SHA-256 of the plugin build that served it.
    pub plugin_digest: Option<&'a str>,
    /// Id of the trusted key that signed that build.
    pub signer_key_id: Option<&'a str>,
    /// `ok`, the error code of an `isError` result (`invalid_params`, `forbidden`, `timeout` …),
    /// or why the call was refused (`unknown_tool`, `rate_limited`, `invalid_request`).
    pub outcome: &'a str,
    /// Wall time of the call, in milliseconds.
    pub duration_ms: f64,
    /// Database time, in milliseconds.
    pub db_time_ms: f64,
    /// `data` queries run.
    pub queries: u32,
    /// Rows read from the database.
    pub rows_read: u64,
    /// Bytes of the result.
    pub result_bytes: u64,
    /// The arguments, redacted.
    pub arguments: ArgumentSummary,
}

impl AuditEntry<'_> {
    /// The current time, formatted for [`AuditEntry::time`].
    pub fn now() -> String {
        OffsetDateTime::now_utc()
            .format(&Rfc3339)
            .unwrap_or_default()
    }
}

/// Argument names (nested ones as `filter.statuses`), and the values of enumerated fields.
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct ArgumentSummary {
    /// Every argument name given.
    pub names: Vec<String>,
    /// Values of fields whose schema lists the accepted values (`enum`, or array items with
    /// an `enum`), keeping only values from that list.
    pub values: BTreeMap<String, Value>,
}

/// Summarizes `arguments` against the tool's input schema.
pub fn summarize(arguments: &Value, input_schema: &Value) -> ArgumentSummary {
    let mut summary = ArgumentSummary::default();
    if let Value::Object(args) = arguments {
        walk(args, input_schema, "", &mut summary);
    }
    summary
}

fn walk(args: &Map<String, Value>, schema: &Value, prefix: &str, out: &mut ArgumentSummary) {
    for (key, value) in args {
        let path = format!("{prefix}{key}");
        let node = &schema["properties"][key.as_str()];
        out.names.push(path.clone());
        let listed = |v: &Value, e: &Value| e.as_array().is_some_and(|e| e.contains(v));
        match value {
            Value::Object(inner) => walk(inner, node, &format!("{path}."), out),
            Value::Array(items) if node["items"]["enum"].is_array() => {
                let kept: Vec<Value> = items
                    .iter()
                    .filter(|v| listed(v, &node["items"]["enum"]))
                    .cloned()
                    .collect();
                out.values.insert(path, Value::Array(kept));
            }
            v if listed(v, &node["enum"]) => {
                out.values.insert(path, v.clone());
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_enumerated_values_are_kept() {
        let schema = json!({"properties": {
            "groupBy": {"enum": ["Status", "Month"]},
            "filter": {"properties": {
                "statuses": {"items": {"enum": ["Loan Open"]}},
                "searchText": {"type": "string"}
            }}
        }});
        let args = json!({"groupBy": "Status", "filter": {"statuses": ["Loan Open", "Smith"], "searchText": "ima.obrien@example.com"}, "free": "secret"});
        let s = summarize(&args, &schema);
        assert_eq!(
            s.names,
            [
                "filter",
                "filter.searchText",
                "filter.statuses",
                "free",
                "groupBy"
            ]
        );
        assert_eq!(
            s.values,
            BTreeMap::from([
                ("filter.statuses".to_string(), json!(["Loan Open"])),
                ("groupBy".to_string(), json!("Status"))
            ])
        );
        let line = serde_json::to_string(&s).unwrap();
        assert!(!line.contains("obrien") && !line.contains("secret") && !line.contains("Smith"));
    }

    #[test]
    fn a_file_sink_appends_flushed_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(path.to_str().unwrap()).unwrap();
        let id = json!(1);
        let entry = AuditEntry {
            time: AuditEntry::now(),
            request_id: &id,
            call_id: 7,
            user_id: "u",
            roles: vec!["Agent", "User"],
            tool: Some("t"),
            plugin_digest: None,
            signer_key_id: None,
            outcome: "ok",
            duration_ms: 1.5,
            db_time_ms: 0.0,
            queries: 0,
            rows_read: 0,
            result_bytes: 2,
            arguments: ArgumentSummary::default(),
        };
        log.record(&entry);
        log.record(&entry);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2);
        let v: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(
            (v["callId"].clone(), v["outcome"].clone()),
            (json!(7), json!("ok"))
        );
        assert!(AuditLog::open("/nonexistent-dir/x.jsonl").is_err());
    }
}
