//! The audit log: one JSON line per `tools/call`, refused calls included, written and flushed
//! before the response is sent, to a file or stdout (`LOANHOST_AUDIT_LOG`). It says who ran
//! which tool, on which plugin build, over how much data, and what came back, and never holds a
//! token, an email, or an argument value that may be personal data: arguments are recorded by
//! name, with values only for fields whose schema enumerates them. A line is bounded whatever
//! the request holds ([`MAX_NAMES`], [`MAX_DEPTH`], [`MAX_NAME_BYTES`], [`MAX_VALUES`]), and
//! it is written with a group commit (`writer`): in the calls' own tasks to a file or a pipe,
//! by a thread of its own to a terminal or a socket (a slow reader makes calls wait without
//! holding a request thread, never the host stall). A line that cannot be written within
//! [`WRITE_WAIT`] is a failure: the answer is still sent, the failure logged and counted
//! (`loanhost_audit_failures_total`). Every line is chained to the one before it and sealed
//! under the host's audit key ([`chain`]): `loanhost audit verify` ([`verify`]) names the first
//! line removed, changed, inserted or moved. Imports nothing of ours.

pub mod chain;
mod sink;
pub mod verify;
mod writer;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// Argument names recorded per call at most; the rest are counted in `namesOmitted`.
pub const MAX_NAMES: usize = 64;
/// Nesting depth of the argument names recorded (`filter.statuses` is depth 2); deeper ones
/// are counted, not named.
pub const MAX_DEPTH: usize = 4;
/// Bytes of one name segment, of the tool name and of a string request id kept in a line;
/// longer ones are cut (at a character boundary) and end with `…`.
pub const MAX_NAME_BYTES: usize = 64;
/// Enumerated values kept per field.
pub const MAX_VALUES: usize = 32;
/// Lines waiting for the writer at most; past that a call's line is a failure at once.
const QUEUE: usize = 1024;
/// How long a call waits for its line to be written and flushed.
pub const WRITE_WAIT: Duration = Duration::from_secs(2);

/// Why an audit line was not written (the answer is sent all the same).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuditFailure {
    /// The write or the flush failed.
    #[error("cannot write the audit log: {0}")]
    Write(String),
    /// The writer's queue is full (the sink is slower than the calls).
    #[error("the audit writer's queue of {QUEUE} lines is full")]
    QueueFull,
    /// The line was not written within [`WRITE_WAIT`].
    #[error("the audit line was not written within {WRITE_WAIT:?}")]
    Stalled,
}

impl AuditFailure {
    /// The metrics label of the failure.
    pub fn label(&self) -> &'static str {
        match self {
            AuditFailure::Write(_) => "write",
            AuditFailure::QueueFull => "queue_full",
            AuditFailure::Stalled => "stalled",
        }
    }
}

/// A line for the writer, and where to say it was written.
pub(crate) struct Job {
    line: Vec<u8>,
    done: tokio::sync::oneshot::Sender<writer::Done>,
}

/// How lines reach the writer.
enum Route {
    /// Written in the calls' own tasks (a file, `/dev/null`, a pipe).
    Inline(writer::Inline),
    /// Handed to the writer's thread (a terminal, a socket).
    Thread(SyncSender<Job>),
}

/// A chain's last line as the writer last wrote it: what an anchor records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anchor {
    /// The chain: the seal of its first line.
    pub chain: String,
    /// The last line's `seq` and seal.
    pub head: chain::Head,
}

/// The audit log of a server.
pub struct AuditLog {
    writer: Option<Route>,
    heads: Option<tokio::sync::watch::Receiver<Option<Anchor>>>,
    /// Calls under way ([`AuditLog::call_begins`]): with others among them, a call that takes
    /// the writer's lead lets them queue their lines first.
    under_way: AtomicUsize,
}

/// A call under way, from its start until it is answered ([`AuditLog::call_begins`]).
pub struct UnderWay<'a>(&'a AtomicUsize);

impl Drop for UnderWay<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl AuditLog {
    /// From `LOANHOST_AUDIT_LOG`: `off`, `stdout`, or a file path (appended to, created with
    /// mode 0600 when new), each line sealed under the key in `key_file` (32 bytes, created
    /// when missing). A file log continues the chain of its last line, or, when the file is
    /// empty (rotated away), of its head (`<log>.head`); stdout starts a chain per process.
    pub fn open(setting: &str, key_file: &Path) -> Result<AuditLog, String> {
        let setting = setting.trim();
        if setting == "off" {
            return Ok(AuditLog::off());
        }
        let key = sink::audit_key(key_file)?;
        let opened = sink::open(setting, &key)?;
        let (heads_tx, heads) = tokio::sync::watch::channel(None);
        let writer = writer::Writer {
            out: opened.out,
            head: opened.head,
            head_file: opened.head_file,
            chain: opened.chain,
            key,
            heads: heads_tx,
        };
        let path = if opened.may_block {
            let (tx, rx) = sync_channel::<Job>(QUEUE);
            std::thread::Builder::new()
                .name("audit-writer".into())
                .spawn(move || writer::run_thread(writer, rx))
                .map_err(|e| format!("cannot start the audit writer: {e}"))?;
            Route::Thread(tx)
        } else {
            Route::Inline(writer::Inline::new(writer))
        };
        Ok(AuditLog {
            writer: Some(path),
            heads: Some(heads),
            under_way: AtomicUsize::new(0),
        })
    }

    /// No audit log.
    pub fn off() -> AuditLog {
        AuditLog {
            writer: None,
            heads: None,
            under_way: AtomicUsize::new(0),
        }
    }

    /// The chain's last line, as each line is written (`None` until a line of a chain whose
    /// first line is known is written): what the host anchors outside the log.
    pub fn heads(&self) -> Option<tokio::sync::watch::Receiver<Option<Anchor>>> {
        self.heads.clone()
    }

    /// Counts a call under way until the guard is dropped: what tells a call taking the
    /// writer's lead that others may have lines to add to its write.
    pub fn call_begins(&self) -> UnderWay<'_> {
        self.under_way.fetch_add(1, Ordering::Relaxed);
        UnderWay(&self.under_way)
    }

    /// Whether entries are written anywhere (callers skip building them when not).
    pub fn is_on(&self) -> bool {
        self.writer.is_some()
    }

    /// Writes one entry as a JSON line and waits (asynchronously, at most [`WRITE_WAIT`]) until
    /// it is flushed. A failure is returned for the caller to log and count; the call has
    /// already run, and its answer is not withheld.
    pub async fn record(&self, entry: &AuditEntry<'_>) -> Result<(), AuditFailure> {
        let Some(writer) = &self.writer else {
            return Ok(());
        };
        // Sealed and newline-ended by the writer, in the order lines are written.
        let line = serde_json::to_vec(entry).map_err(|e| AuditFailure::Write(e.to_string()))?;
        let (done, written) = tokio::sync::oneshot::channel();
        let job = Job { line, done };
        let (refused, inline) = match writer {
            Route::Inline(inline) => match inline.enqueue(job, QUEUE) {
                Ok(Some(lead)) => {
                    // A group commit when others are under way (PostgreSQL's
                    // `commit_siblings`): the lead yields once, so that the calls ready on
                    // this worker reach their lines and join its write; one write for many.
                    // Alone, it writes at once (a yield would cost it a poll of the reactor).
                    if self.under_way.load(Ordering::Relaxed) > 1 {
                        tokio::task::yield_now().await;
                    }
                    lead.write();
                    (None, Some(inline))
                }
                Ok(None) => (None, Some(inline)),
                Err(_) => (Some(AuditFailure::QueueFull), Some(inline)),
            },
            Route::Thread(tx) => match tx.try_send(job) {
                Ok(()) => (None, None),
                Err(TrySendError::Full(_)) => (Some(AuditFailure::QueueFull), None),
                Err(TrySendError::Disconnected(_)) => (
                    Some(AuditFailure::Write("the audit writer has stopped".into())),
                    None,
                ),
            },
        };
        if let Some(refused) = refused {
            return Err(refused);
        }
        let mut waiting = writer::Waiting::new(written, inline);
        match waiting
            .written(tokio::time::Instant::now() + WRITE_WAIT)
            .await
        {
            Some(Ok(())) => Ok(()),
            Some(Err(e)) => Err(AuditFailure::Write(e)),
            None => Err(AuditFailure::Stalled),
        }
    }
}

/// `text`, cut to at most [`MAX_NAME_BYTES`] bytes at a character boundary (`…` marks a cut).
pub fn bounded(text: &str) -> Cow<'_, str> {
    if text.len() <= MAX_NAME_BYTES {
        return Cow::Borrowed(text);
    }
    let mut end = MAX_NAME_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}…", &text[..end]))
}

/// A request id as recorded: a long string id is cut like a name.
pub fn bounded_id(id: &Value) -> Value {
    match id {
        Value::String(s) if s.len() > MAX_NAME_BYTES => Value::String(bounded(s).into_owned()),
        other => other.clone(),
    }
}

/// One audited call.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry<'a> {
    /// When the call ended (RFC 3339, UTC).
    pub time: String,
    /// The JSON-RPC id of the request (see [`bounded_id`]).
    pub request_id: Value,
    /// The host's id of the call (`0` when it never ran); joins the server log.
    pub call_id: u64,
    /// The caller's platform user id.
    pub user_id: &'a str,
    /// The caller's role codes.
    pub roles: Vec<&'a str>,
    /// The tool asked for (`null` when the request named none), see [`bounded`].
    pub tool: Option<Cow<'a, str>>,
    /// SHA-256 of the plugin build that served it.
    pub plugin_digest: Option<&'a str>,
    /// Where that build came from: `folder`, or the registry reference the host follows.
    pub plugin_source: Option<&'a str>,
    /// The digest installed from that source (`sha256:…`): the OCI artifact's manifest digest
    /// for a registry reference, as `loanhost_plugin_served` names it.
    pub artifact_digest: Option<&'a str>,
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
    /// Of those, the rows of loans the plugin listed (loan:reporting@1.2.0 `listing`), each
    /// the fields of one loan its manifest grants; absent when it listed none.
    #[serde(skip_serializing_if = "is_zero")]
    pub rows_listed: u64,
    /// The ids of the loans listed, in order (at most 1,000 a call); absent when none.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub loans_listed: &'a [String],
    /// Of the rows, the people the plugin found (loan:reporting@1.2.0 `people`): each a
    /// person's id, parts and, for a caller who may read names, name; absent when none.
    #[serde(skip_serializing_if = "is_zero")]
    pub people_found: u64,
    /// Bytes of the result.
    pub result_bytes: u64,
    /// The arguments, redacted.
    pub arguments: ArgumentSummary,
    /// The REST route that made the request (its template: `GET /api/users/{userId}/licenses`),
    /// absent for `/mcp`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route: Option<&'a str>,
}

impl AuditEntry<'_> {
    /// The current time, formatted for [`AuditEntry::time`].
    pub fn now() -> String {
        OffsetDateTime::now_utc()
            .format(&Rfc3339)
            .unwrap_or_default()
    }
}

/// Argument names (nested ones as `filter.statuses`), and the values of enumerated fields:
/// bounded (see the module's constants) whatever the arguments hold.
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArgumentSummary {
    /// Argument names given, the first [`MAX_NAMES`] to [`MAX_DEPTH`] levels deep, each
    /// segment cut to [`MAX_NAME_BYTES`].
    pub names: Vec<String>,
    /// Values of fields whose schema lists the accepted values (`enum`, or array items with
    /// an `enum`), keeping only values from that list, at most [`MAX_VALUES`] per field.
    pub values: BTreeMap<String, Value>,
    /// Names given but not listed (past [`MAX_NAMES`] or [`MAX_DEPTH`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub names_omitted: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Summarizes `arguments` against the tool's input schema.
pub fn summarize(arguments: &Value, input_schema: &Value) -> ArgumentSummary {
    let mut summary = ArgumentSummary::default();
    if let Value::Object(args) = arguments {
        walk(args, input_schema, "", 1, &mut summary);
    }
    summary
}

fn walk(
    args: &Map<String, Value>,
    schema: &Value,
    prefix: &str,
    depth: usize,
    out: &mut ArgumentSummary,
) {
    for (key, value) in args {
        if depth > MAX_DEPTH || out.names.len() >= MAX_NAMES {
            out.names_omitted += 1 + count_names(value);
            continue;
        }
        let path = format!("{prefix}{}", bounded(key));
        let node = &schema["properties"][key.as_str()];
        out.names.push(path.clone());
        let listed = |v: &Value, e: &Value| e.as_array().is_some_and(|e| e.contains(v));
        match value {
            Value::Object(inner) => walk(inner, node, &format!("{path}."), depth + 1, out),
            Value::Array(items) if node["items"]["enum"].is_array() => {
                let kept: Vec<Value> = items
                    .iter()
                    .filter(|v| listed(v, &node["items"]["enum"]))
                    .take(MAX_VALUES)
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

/// Names nested in `value` (object members at any depth).
fn count_names(value: &Value) -> u64 {
    match value {
        Value::Object(m) => m.values().map(|v| 1 + count_names(v)).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests;
