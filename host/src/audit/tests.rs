//! The audit line's summary of arguments, its bounds, and its sinks.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Map, Value};

use super::{
    bounded, bounded_id, sink, summarize, ArgumentSummary, AuditEntry, AuditLog, MAX_DEPTH,
    MAX_NAMES, MAX_NAME_BYTES, MAX_VALUES,
};

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

#[tokio::test]
async fn a_file_sink_appends_flushed_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let key = dir.path().join("audit.key");
    let log = AuditLog::open(path.to_str().unwrap(), &key).unwrap();
    let entry = AuditEntry {
        roles: vec!["Agent", "User"],
        tool: Some("t".into()),
        duration_ms: 1.5,
        result_bytes: 2,
        ..entry(7)
    };
    log.record(&entry).await.unwrap();
    log.record(&entry).await.unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 2);
    let v: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(
        (v["callId"].clone(), v["outcome"].clone()),
        (json!(7), json!("ok"))
    );
    assert!(AuditLog::open("/nonexistent-dir/x.jsonl", &key).is_err());
}

/// Arguments nested `depth` deep, each level with a key of `key_bytes` and `wide` siblings.
fn nested(depth: usize, key_bytes: usize, wide: usize) -> Value {
    let mut v = json!(1);
    for d in 0..depth {
        let mut m = Map::new();
        for w in 0..wide {
            m.insert(format!("{d}-{w}-{}", "k".repeat(key_bytes)), json!(0));
        }
        m.insert(format!("{d}-{}", "k".repeat(key_bytes)), v);
        v = Value::Object(m);
    }
    v
}

#[test]
fn a_summary_is_bounded_however_deep_and_wide_the_arguments() {
    // About 1 MiB of arguments, 120 levels of 8 KiB keys: unbounded, the names with their
    // full prefixes would be ~60 MB.
    let args = nested(120, 8 * 1024, 0);
    let s = summarize(&args, &Value::Null);
    assert_eq!(s.names.len(), MAX_DEPTH);
    assert_eq!(s.names_omitted, 120 - MAX_DEPTH as u64);
    let line = serde_json::to_string(&s).unwrap();
    assert!(line.len() < 1024, "{} bytes: {line}", line.len());
    // Wide: names past MAX_NAMES are counted.
    let wide = nested(2, 10, 100);
    let s = summarize(&wide, &Value::Null);
    assert_eq!(s.names.len(), MAX_NAMES);
    assert_eq!(s.names.len() as u64 + s.names_omitted, 2 * 101);
    // Enumerated values: at most MAX_VALUES kept.
    let schema = json!({"properties": {"statuses": {"items": {"enum": ["Loan Open"]}}}});
    let s = summarize(&json!({"statuses": vec!["Loan Open"; 10_000]}), &schema);
    assert_eq!(s.values["statuses"].as_array().unwrap().len(), MAX_VALUES);
    // Names, tool names and string ids are cut at a character boundary.
    let long = "é".repeat(100);
    assert!(bounded(&long).len() <= MAX_NAME_BYTES + '…'.len_utf8());
    assert!(bounded(&long).ends_with('…'));
    assert_eq!(bounded("report_loans"), "report_loans");
    assert_eq!(
        bounded_id(&json!("x".repeat(10_000)))
            .as_str()
            .unwrap()
            .len(),
        MAX_NAME_BYTES + '…'.len_utf8()
    );
    assert_eq!(bounded_id(&json!(7)), json!(7));
}

#[tokio::test]
async fn a_failed_write_is_reported_not_hidden() {
    // /dev/full accepts the open and fails every write with ENOSPC.
    if !Path::new("/dev/full").exists() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::open("/dev/full", &dir.path().join("audit.key")).unwrap();
    let entry = entry(1);
    let e = log.record(&entry).await.unwrap_err();
    assert_eq!(e.label(), "write", "{e}");
}

/// An entry of call `call_id` for the sinks' tests.
pub(super) fn entry(call_id: u64) -> AuditEntry<'static> {
    AuditEntry {
        time: AuditEntry::now(),
        request_id: json!(call_id),
        call_id,
        user_id: "u",
        roles: vec![],
        tool: None,
        plugin_digest: None,
        plugin_source: None,
        artifact_digest: None,
        signer_key_id: None,
        outcome: "ok",
        duration_ms: 0.0,
        db_time_ms: 0.0,
        queries: 0,
        rows_read: 0,
        rows_listed: 0,
        loans_listed: &[],
        people_found: 0,
        result_bytes: 0,
        arguments: ArgumentSummary::default(),
        route: None,
    }
}

#[test]
fn a_pipe_whose_reader_is_behind_is_written_whole_without_holding_the_worker() {
    use std::io::Write as _;
    use tokio::io::AsyncReadExt as _;
    // Arrange: a pipe (64 KiB) whose reader is a task of a runtime's one worker: were the
    // writer to wait on that worker, the reader could never run and the write never end. The
    // runtime runs on a thread of its own, watched from here.
    let (r, w) = std::io::pipe().unwrap();
    let data: Vec<u8> = (0..1u32 << 20).map(|i| (i % 251) as u8).collect();
    let sent = data.clone();
    let (done, got) = std::sync::mpsc::channel();

    // Act: 1 MiB written from a task of that worker.
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let read = rt.block_on(async move {
            let mut reader =
                tokio::net::unix::pipe::Receiver::from_owned_fd(std::os::fd::OwnedFd::from(r))
                    .unwrap();
            let writer = tokio::spawn(async move {
                let mut pipe = sink::Pipe(std::fs::File::from(std::os::fd::OwnedFd::from(w)));
                pipe.write_all(&sent).unwrap();
            });
            let read = tokio::spawn(async move {
                let mut got = Vec::new();
                reader.read_to_end(&mut got).await.unwrap();
                got
            });
            writer.await.unwrap();
            read.await.unwrap()
        });
        let _ = done.send(read);
    });

    // Assert: every byte, in order (the bound only against a deadlock).
    let got = got
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the reader ran while the writer waited");
    assert_eq!(got.len(), data.len());
    assert!(got == data);
}
