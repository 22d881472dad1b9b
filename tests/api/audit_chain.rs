//! The audit log's chain (issue #74, part 2) on logs a real server wrote: one chain across a
//! restart and a rotation, verified by `loanhost audit verify` as one; and every kind of edit
//! (a line changed, removed, inserted, moved, forged, lines cut from the end) named at its
//! `file:line` by the verifier, which exits 1.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::helpers::loanhost_binary;

/// A server auditing to `log` under the key in `key`.
async fn chained_app(log: &Path, key: &Path) -> crate::helpers::TestApp {
    crate::audit::audited_app_keyed(log, Some(key)).await
}

/// `calls` audited calls by the test Agent.
async fn calls(app: &crate::helpers::TestApp, calls: usize) {
    for _ in 0..calls {
        app.call_ok("agent-token", "report_loans", json!({"groupBy": "Status"}))
            .await;
    }
}

/// `loanhost audit verify --key KEY FILES…`: (exit code, what it printed).
fn verify(key: &Path, files: &[PathBuf]) -> (i32, String) {
    verify_with(key, &[], files)
}

/// `loanhost audit verify --key KEY ARGS… FILES…`: (exit code, what it printed).
fn verify_with(key: &Path, args: &[&str], files: &[PathBuf]) -> (i32, String) {
    let out = std::process::Command::new(loanhost_binary().expect("the loanhost binary is built"))
        .arg("audit")
        .arg("verify")
        .arg("--key")
        .arg(key)
        .args(args)
        .args(files)
        .env_clear()
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
        .trim()
        .to_string(),
    )
}

#[tokio::test]
async fn one_chain_runs_across_a_restart_and_a_rotation_and_verifies_whole() {
    // Arrange: three calls; a restart and two more; the log rotated away, a restart and two.
    let dir = tempfile::tempdir().unwrap();
    let (log, key) = (dir.path().join("audit.jsonl"), dir.path().join("audit.key"));
    let rotated = dir.path().join("audit.jsonl.1");
    {
        let app = chained_app(&log, &key).await;
        calls(&app, 3).await;
    }
    {
        let app = chained_app(&log, &key).await;
        calls(&app, 2).await;
    }
    std::fs::rename(&log, &rotated).unwrap();
    {
        let app = chained_app(&log, &key).await;
        calls(&app, 2).await;
    }

    // Act
    let whole = verify(&key, &[rotated.clone(), log.clone()]);
    let live = verify(&key, std::slice::from_ref(&log));
    let other_key = dir.path().join("other.key");
    std::fs::write(&other_key, [9u8; 32]).unwrap();
    let foreign = verify(&other_key, &[rotated.clone(), log.clone()]);

    // Assert
    assert_eq!(whole.0, 0, "{}", whole.1);
    assert!(
        whole.1.starts_with("ok: 7 lines (seq 1..7) in 2 files, one unbroken chain, ending where the log's head says"),
        "{}",
        whole.1
    );
    assert_eq!(live.0, 0, "{}", live.1);
    assert!(live.1.starts_with("ok: 2 lines (seq 6..7)"), "{}", live.1);
    let first: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&rotated)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(first["seq"], 1);
    assert_eq!(first["prev"], "0".repeat(64));
    assert_eq!(foreign.0, 1, "{}", foreign.1);
    assert!(
        foreign.1.ends_with("audit.jsonl.1:1: its seal does not match its content: the line was changed, or written without the key"),
        "{}",
        foreign.1
    );
}

#[tokio::test]
async fn every_kind_of_edit_is_named_at_its_line() {
    // Arrange: a log of six lines and its head.
    let dir = tempfile::tempdir().unwrap();
    let (log, key) = (dir.path().join("audit.jsonl"), dir.path().join("audit.key"));
    {
        let app = chained_app(&log, &key).await;
        calls(&app, 6).await;
    }
    let original: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(original.len(), 6);
    let head = std::fs::read(dir.path().join("audit.jsonl.head")).unwrap();
    let edited = |name: &str, lines: Vec<String>| -> (i32, String) {
        let case = dir.path().join(name);
        std::fs::create_dir(&case).unwrap();
        let path = case.join("audit.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        std::fs::write(case.join("audit.jsonl.head"), &head).unwrap();
        verify(&key, &[path])
    };
    let with = |f: &dyn Fn(&mut Vec<String>)| {
        let mut l = original.clone();
        f(&mut l);
        l
    };

    // Act
    let cases = [
        (
            "changed",
            with(&|l| l[2] = l[2].replacen("\"outcome\":\"ok\"", "\"outcome\":\"forbidden\"", 1)),
        ),
        (
            "removed",
            with(&|l| {
                l.remove(2);
            }),
        ),
        ("inserted", with(&|l| l.insert(2, original[1].clone()))),
        ("moved", with(&|l| l.swap(2, 3))),
        (
            "forged",
            with(&|l| {
                l.push(l[5].replacen("\"seq\":6", "\"seq\":7", 1));
            }),
        ),
        ("cut", with(&|l| l.truncate(4))),
    ];
    let verdicts: Vec<(&str, (i32, String))> =
        cases.into_iter().map(|(n, l)| (n, edited(n, l))).collect();

    // Assert: each names where it broke.
    let expect = [
        ("changed", "audit.jsonl:3: its seal does not match its content"),
        (
            "removed",
            "audit.jsonl:3: seq 4 follows seq 2: seq 3 was removed or moved from here",
        ),
        (
            "inserted",
            "audit.jsonl:3: seq 2 follows seq 2: this line was inserted or moved here",
        ),
        (
            "moved",
            "audit.jsonl:3: seq 4 follows seq 2: seq 3 was removed or moved from here",
        ),
        ("forged", "audit.jsonl:7: its seal does not match its content"),
        (
            "cut",
            "audit.jsonl.head: the head names seq 6, the log ends at seq 4: the last 2 lines were removed",
        ),
    ];
    for ((name, (code, text)), (want_name, want)) in verdicts.iter().zip(expect) {
        assert_eq!(*name, want_name);
        assert_eq!(*code, 1, "{name}: {text}");
        assert!(text.starts_with("broken: "), "{name}: {text}");
        assert!(text.contains(want), "{name}: {text}");
    }
    // The log as written still verifies.
    assert_eq!(verify(&key, &[log]).0, 0);
}

/// Waits until PostgreSQL at `url` holds an anchor of `seq` (the host anchors every second
/// here; bounded at 60 s for a busy machine).
async fn anchored(url: &str, seq: i64) {
    let pool = sqlx::PgPool::connect(url).await.unwrap();
    let started = std::time::Instant::now();
    loop {
        let (top,): (Option<i64>,) = sqlx::query_as("SELECT max(seq) FROM audit_anchors")
            .fetch_one(&pool)
            .await
            .unwrap();
        if top == Some(seq) {
            return;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "seq {seq} not anchored within 60 s (anchored: {top:?})"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn anchors_in_postgresql_name_a_log_rewound_with_its_head_and_refuse_to_be_edited() {
    // Arrange: a server on PostgreSQL anchoring its chain every second; four calls, anchored.
    let dir = tempfile::tempdir().unwrap();
    let (log, key) = (dir.path().join("audit.jsonl"), dir.path().join("audit.key"));
    let url = crate::helpers::fresh_postgres_database().await;
    let tool = "report_loans";
    let mut options = crate::helpers::AppOptions::default().plugin(
        tool,
        crate::helpers::tool_wasm(tool),
        crate::helpers::tool_manifest(tool),
    );
    for (k, v) in [
        ("LOANHOST_AUDIT_LOG", log.display().to_string()),
        ("LOANHOST_AUDIT_KEY_FILE", key.display().to_string()),
        ("LOANHOST_DATABASE_URL", url.clone()),
        ("LOANHOST_AUDIT_ANCHOR_SECS", "1".to_string()),
    ] {
        options.env.push((k, v));
    }
    {
        let app = crate::helpers::spawn_app_with(options).await;
        calls(&app, 4).await;
        anchored(&url, 4).await;
    }
    let anchors = ["--anchors", url.as_str()];

    // Act: the log as written; then cut to two lines with its head rewound to match them
    // (what someone who can write both files, but not PostgreSQL, can do); then an attempt
    // to move the anchor back.
    let whole = verify_with(&key, &anchors, std::slice::from_ref(&log));
    let lines: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    std::fs::write(&log, lines[..2].join("\n") + "\n").unwrap();
    let key_bytes: [u8; 32] = std::fs::read(&key).unwrap().try_into().unwrap();
    let head_path = dir.path().join("audit.jsonl.head");
    let (_, chain) = loanhost::audit::chain::read_head_and_chain(
        &key_bytes,
        &std::fs::read_to_string(&head_path).unwrap(),
    )
    .expect("the head names its chain");
    let second: serde_json::Value = serde_json::from_str(&lines[1]).unwrap();
    let rewound_head = loanhost::audit::chain::Head {
        seq: 2,
        seal: second["seal"].as_str().unwrap().to_string(),
    };
    std::fs::write(
        &head_path,
        loanhost::audit::chain::head_text(&key_bytes, &rewound_head, chain.as_deref()),
    )
    .unwrap();
    let without_anchors = verify(&key, std::slice::from_ref(&log));
    let with_anchors = verify_with(&key, &anchors, std::slice::from_ref(&log));
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    let delete = sqlx::query("DELETE FROM audit_anchors")
        .execute(&pool)
        .await;

    // Assert
    assert_eq!(whole.0, 0, "{}", whole.1);
    assert!(whole.1.contains("none past its end"), "{}", whole.1);
    assert_eq!(
        without_anchors.0, 0,
        "a rewind is consistent without anchors: {}",
        without_anchors.1
    );
    assert_eq!(with_anchors.0, 1, "{}", with_anchors.1);
    assert!(
        with_anchors
            .1
            .contains("the log ends at seq 2, but seq 4 was anchored at"),
        "{}",
        with_anchors.1
    );
    let refused = delete.unwrap_err().to_string();
    assert!(
        refused.contains("audit anchors are only ever added"),
        "{refused}"
    );
}
