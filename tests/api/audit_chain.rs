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
    let out = std::process::Command::new(loanhost_binary().expect("the loanhost binary is built"))
        .arg("audit")
        .arg("verify")
        .arg("--key")
        .arg(key)
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
