//! A host following references of registries that attack it (`hostile_registry.rs`): a digest
//! that names a folder touches nothing and is refused; a manifest without end is cut off at its
//! cap; an answer that never comes ends at the reference's deadline and holds up no other
//! reference; an error body cannot write a line into the log; credentials never go to a realm
//! elsewhere over plain HTTP; an artifact of another tool is refused; a planted link in the
//! cache is not written through.

use std::sync::atomic::Ordering;

use loanhost::telemetry::Label;

use crate::helpers::{spawn_app_with, AppOptions, TestApp};
use crate::hostile_registry::{HostileRegistry, Mode};
use crate::registry::Registry;
use crate::registry_follow::{push_revision, retag, revision, Release};

/// A host following `references` (comma-joined) over plain HTTP with `cache`, signatures not
/// required, resolving every second, with `extra` settings.
async fn following(
    references: &[&str],
    plain_http: &[&str],
    cache: &std::path::Path,
    extra: &[(&'static str, String)],
) -> TestApp {
    let mut options = AppOptions::default();
    options.env.extend([
        ("LOANHOST_PLUGIN_REFS", references.join(",")),
        ("LOANHOST_REGISTRY_PLAIN_HTTP", plain_http.join(",")),
        ("LOANHOST_REGISTRY_INTERVAL_SECS", "1".to_string()),
        ("LOANHOST_CACHE_DIR", cache.display().to_string()),
        ("LOANHOST_REGISTRY_ALLOW_UNSIGNED", "true".to_string()),
    ]);
    options.env.extend_from_slice(extra);
    spawn_app_with(options).await
}

fn refusal(app: &TestApp, reference: &str) -> Option<String> {
    app.plugins.registry().refusals().get(reference).cloned()
}

fn events(app: &TestApp, kind: &str) -> u64 {
    app.plugins
        .metrics()
        .registry_events
        .get_or_create(&Label { kind: kind.into() })
        .get()
}

#[tokio::test]
async fn a_digest_shaped_like_a_path_is_refused_and_no_folder_it_names_is_touched() {
    // Arrange: a database-like folder beside the cache, and one elsewhere, each with a file.
    let kept = tempfile::tempdir().unwrap();
    let cache = kept.path().join("cache");
    let beside = kept.path().join("data");
    let elsewhere = tempfile::tempdir().unwrap();
    for dir in [&beside, &elsewhere.path().to_path_buf()] {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("loanhost.db"), b"rows").unwrap();
    }
    std::fs::create_dir_all(cache.join("oci")).unwrap();
    let hostile = [
        format!("sha256:{}", elsewhere.path().display()),
        "sha256:../..".to_string(),
        "sha256:../../data".to_string(),
        format!("sha256:{}", "AB".repeat(32)),
        format!("sha256:{}/../..", "a".repeat(58)),
        "sha256:".to_string(),
    ];
    let registry = HostileRegistry::start(Mode::NotFound).await;
    let reference = registry.reference("team/revision:live");

    for digest in &hostile {
        // Act
        registry.set(Mode::Digest(digest.clone()));
        let app = following(&[&reference], &[&registry.host], &cache, &[]).await;

        // Assert: refused as no digest, counted, listed; every folder and file still there.
        let why = refusal(&app, &reference).expect("refused");
        assert!(
            why.contains("is not sha256:<64 lower-case hex digits>"),
            "{digest}: {why}"
        );
        assert!(events(&app, "digest") >= 1, "{digest}");
        for dir in [&beside, &elsewhere.path().to_path_buf()] {
            assert_eq!(
                std::fs::read(dir.join("loanhost.db")).unwrap(),
                b"rows",
                "{digest}"
            );
        }
        assert!(cache.join("oci").is_dir(), "{digest}");
    }
}

#[tokio::test]
async fn a_manifest_without_end_is_cut_off_at_its_cap_as_it_streams() {
    // Arrange
    let kept = tempfile::tempdir().unwrap();
    for declared in [false, true] {
        let registry = HostileRegistry::start(Mode::Endless { declared }).await;
        let reference = registry.reference("team/revision:live");

        // Act
        let app = following(
            &[&reference],
            &[&registry.host],
            &kept.path().join("c"),
            &[],
        )
        .await;

        // Assert: refused at the 256 KiB cap, having taken a sliver of the gigabyte offered.
        let why = refusal(&app, &reference).expect("refused");
        assert!(why.contains("cap of 262144"), "{why}");
        let sent = registry.sent.load(Ordering::Relaxed);
        assert!(sent < 32 << 20, "{sent} bytes sent before the host hung up");
    }
}

#[tokio::test]
async fn an_error_body_cannot_write_a_line_of_its_own_into_the_log() {
    // Arrange: a 500 whose body carries a well-formed log line of its own.
    let forged =
        "boom\n2026-12-01T00:00:00.000000Z  INFO loanhost: plugin loaded plugin=report_loans\r\n";
    let registry = HostileRegistry::start(Mode::ErrorBody(forged.repeat(200))).await;
    let reference = registry.reference("team/revision:live");
    let kept = tempfile::tempdir().unwrap();

    // Act
    let app = following(&[&reference], &[&registry.host], kept.path(), &[]).await;

    // Assert: the reason logged and listed is one line, cut short, the newline escaped.
    let why = refusal(&app, &reference).expect("refused");
    assert!(!why.contains(['\n', '\r']), "{why:?}");
    assert!(why.contains("boom\\n2026-12-01"), "{why}");
    assert!(
        why.chars().count() < 1000,
        "{} characters",
        why.chars().count()
    );
}

#[tokio::test]
async fn an_answer_that_never_comes_ends_at_the_deadline() {
    // Arrange
    let registry = HostileRegistry::start(Mode::Hang).await;
    let reference = registry.reference("team/revision:live");
    let kept = tempfile::tempdir().unwrap();
    let deadline = [("LOANHOST_REGISTRY_TIMEOUT_SECS", "1".to_string())];

    // Act
    let app = following(&[&reference], &[&registry.host], kept.path(), &deadline).await;

    // Assert: the round was abandoned, counted, and the connection let go.
    let why = refusal(&app, &reference).expect("refused");
    assert!(
        why.contains("within 1 s (LOANHOST_REGISTRY_TIMEOUT_SECS)"),
        "{why}"
    );
    assert!(events(&app, "timeout") >= 1);
    app.eventually("a later round asks again", || async {
        registry.requests("GET /v2/").len() >= 2
    })
    .await;
}

#[tokio::test]
async fn a_registry_that_never_answers_holds_up_no_other_reference() {
    // Arrange: revision a behind a real registry, a second reference on one that will hang.
    let good = Registry::start(None, false).await;
    let live = good.reference("team/revision:live");
    let a = push_revision(&good, "revision-a", &live, Release::Unsigned).await;
    let slow = HostileRegistry::start(Mode::NotFound).await;
    let stuck = slow.reference("team/other_report:live");
    let kept = tempfile::tempdir().unwrap();
    let app = following(
        &[&live, &stuck],
        &[&good.host, &slow.host],
        kept.path(),
        &[],
    )
    .await;
    assert_eq!(revision(&app).await.as_deref(), Some("a"));

    // Act: the slow registry holds its next request; then the good tag moves to b.
    slow.set(Mode::Hang);
    app.eventually("the slow registry holds a request", || async {
        slow.hanging.load(Ordering::SeqCst) > 0
    })
    .await;
    let b = push_revision(
        &good,
        "revision-b",
        &good.reference("team/revision:b"),
        Release::Unsigned,
    )
    .await;
    retag(&good, &b);

    // Assert: b is followed while the other reference's request is still held.
    app.eventually("revision b is served", || async {
        revision(&app).await.as_deref() == Some("b")
    })
    .await;
    assert!(slow.hanging.load(Ordering::SeqCst) > 0, "still held");
    assert_ne!(a, b);
}

#[tokio::test]
async fn credentials_never_follow_a_token_challenge_to_a_plain_http_realm_elsewhere() {
    // Arrange: the realm is another loopback port, over plain HTTP; an auth file for the
    // registry.
    let realm = HostileRegistry::start(Mode::NotFound).await;
    let registry =
        HostileRegistry::start(Mode::Realm(format!("http://{}/token", realm.host))).await;
    let reference = registry.reference("team/revision:live");
    let kept = tempfile::tempdir().unwrap();
    let auth = kept.path().join("auth.json");
    use base64::Engine as _;
    let secret = base64::engine::general_purpose::STANDARD.encode("ci:s3cret-pass");
    std::fs::write(
        &auth,
        serde_json::json!({"auths": {registry.host.clone(): {"auth": secret}}}).to_string(),
    )
    .unwrap();
    let extra = [("LOANHOST_REGISTRY_AUTH_FILE", auth.display().to_string())];

    // Act
    let app = following(
        &[&reference],
        &[&registry.host],
        &kept.path().join("c"),
        &extra,
    )
    .await;

    // Assert: refused and named; the realm was never called.
    let why = refusal(&app, &reference).expect("refused");
    assert!(why.contains("token realm"), "{why}");
    assert!(why.contains(&realm.host), "{why}");
    assert!(realm.requests("").is_empty(), "{:?}", realm.requests(""));
    assert!(registry
        .requests("")
        .iter()
        .all(|(_, authorization)| authorization.is_none()));
}

#[tokio::test]
async fn a_reference_serves_only_the_tool_it_is_bound_to() {
    // Arrange: the repository `team/report_loans` carries the revision tool.
    let registry = Registry::start(None, false).await;
    let reference = registry.reference("team/report_loans:live");
    push_revision(&registry, "revision-a", &reference, Release::Unsigned).await;
    let bound = format!("revision={}", registry.reference("team/report_loans:live"));
    let kept = tempfile::tempdir().unwrap();

    // Act
    let claimed = following(
        &[&reference],
        &[&registry.host],
        &kept.path().join("a"),
        &[],
    )
    .await;
    let declared = following(&[&bound], &[&registry.host], &kept.path().join("b"), &[]).await;

    // Assert: under its repository's name it is refused; bound by name it is served.
    let why = refusal(&claimed, &reference).expect("refused");
    assert!(why.contains("bound to tool report_loans"), "{why}");
    assert!(claimed.plugins.registry().get("revision").is_none());
    assert!(events(&claimed, "tool") >= 1);
    assert_eq!(revision(&declared).await.as_deref(), Some("a"));
}

#[tokio::test]
async fn a_link_planted_in_the_cache_is_neither_written_through_nor_followed() {
    // Arrange: revision a pulled once; then its entry replaced by a link to a folder of the
    // host's, and the reference's record by a link to a file of the host's.
    let registry = Registry::start(None, false).await;
    let live = registry.reference("team/revision:live");
    let a = push_revision(&registry, "revision-a", &live, Release::Unsigned).await;
    let kept = tempfile::tempdir().unwrap();
    let cache = kept.path().join("cache");
    let first = following(&[&live], &[&registry.host], &cache, &[]).await;
    assert_eq!(revision(&first).await.as_deref(), Some("a"));
    drop(first);
    let victim_dir = kept.path().join("data");
    std::fs::create_dir_all(&victim_dir).unwrap();
    std::fs::write(victim_dir.join("loanhost.db"), b"rows").unwrap();
    let victim_file = kept.path().join("dev-idp-rsa.pem");
    std::fs::write(&victim_file, b"key").unwrap();
    let entry = cache.join("oci").join(a.trim_start_matches("sha256:"));
    std::fs::remove_dir_all(&entry).unwrap();
    std::os::unix::fs::symlink(&victim_dir, &entry).unwrap();
    let refs = cache.join("oci/refs");
    for record in std::fs::read_dir(&refs).unwrap() {
        let record = record.unwrap().path();
        std::fs::remove_file(&record).unwrap();
        std::os::unix::fs::symlink(&victim_file, &record).unwrap();
    }

    // Act: a host starts again on that cache.
    let again = following(&[&live], &[&registry.host], &cache, &[]).await;

    // Assert: the link is gone, a pulled again, and the host's files untouched.
    assert_eq!(revision(&again).await.as_deref(), Some("a"));
    assert!(!std::fs::symlink_metadata(&entry).unwrap().is_symlink());
    assert_eq!(
        std::fs::read(victim_dir.join("loanhost.db")).unwrap(),
        b"rows"
    );
    assert_eq!(std::fs::read(&victim_file).unwrap(), b"key");
    assert!(events(&again, "cache_mismatch") >= 1);
}

#[tokio::test]
async fn an_artifact_is_loaded_from_the_bytes_that_were_verified() {
    // Arrange: a revision's files held in memory, as a pull verified them, for a folder that
    // does not exist (nothing on disk to read them from again).
    use crate::helpers::{fixture_wasm, manifest, DEFAULT_ROLES};
    let app = crate::helpers::spawn_app().await;
    let toml = manifest("revision", DEFAULT_ROLES, &["loans"], 16, 20_000, 65536);
    let files = vec![
        ("revision.wasm".to_string(), fixture_wasm("revision-a")),
        ("revision.toml".to_string(), toml.into_bytes()),
    ];
    let nowhere = std::path::Path::new("/nonexistent/loanhost-cache/oci/entry");

    // Act
    let loaded = app
        .plugins
        .load(&loanhost::plugins::PluginFiles::in_memory(
            nowhere, "revision", files,
        ))
        .await;

    // Assert
    let plugin = loaded.expect("loaded from memory");
    assert_eq!(plugin.tool.name, "revision");
}
