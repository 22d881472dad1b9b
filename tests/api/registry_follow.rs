//! A host following a registry tag (`LOANHOST_PLUGIN_REFS`), against the reference registry: it
//! serves what the tag names, follows the tag when it moves, keeps serving through a bad
//! release, follows a rollback, refuses unsigned artifacts by default, and after a restart
//! without a registry serves the last artifact it verified.

use serde_json::json;
use sha2::Digest as _;

use crate::helpers::{fixture_wasm, manifest, spawn_app_with, AppOptions, TestApp, DEFAULT_ROLES};
use crate::registry::{loanhost, Registry};

/// How a release of `revision` is made.
#[derive(Clone, Copy)]
pub(crate) enum Release<'a> {
    /// Unsigned.
    Unsigned,
    /// With a manifest that does not parse.
    Broken,
    /// Signed with the key `plugin keygen` wrote into this folder.
    SignedBy(&'a std::path::Path),
    /// Signed so, then its component changed.
    TamperedAfterSigning(&'a std::path::Path),
    /// A component that imports WASI (a filesystem) instead of the fixture.
    ImportingWasi,
}

/// Pushes the `revision` fixture `fixture`, made as `release` says, to `reference`; the
/// artifact's digest.
pub(crate) async fn push_revision(
    registry: &Registry,
    fixture: &str,
    reference: &str,
    release: Release<'_>,
) -> String {
    push_revision_with(registry, fixture, reference, release, &[]).await
}

/// As [`push_revision`], with `env` for `plugin push` (credentials, a CA).
pub(crate) async fn push_revision_with(
    registry: &Registry,
    fixture: &str,
    reference: &str,
    release: Release<'_>,
    env: &[(&str, String)],
) -> String {
    let dir = tempfile::tempdir().unwrap();
    let (wasm, toml) = (
        dir.path().join("revision.wasm"),
        dir.path().join("revision.toml"),
    );
    let component = match release {
        Release::ImportingWasi => {
            let wat = "(component (import \"wasi:filesystem/types@0.2.0\" (instance)))";
            wat::parse_str(wat).unwrap()
        }
        _ => fixture_wasm(fixture),
    };
    std::fs::write(&wasm, component).unwrap();
    let manifest_text = match release {
        Release::Broken => "this is [not toml".to_string(),
        _ => manifest("revision", DEFAULT_ROLES, &["loans"], 16, 20_000, 65536),
    };
    std::fs::write(&toml, manifest_text).unwrap();
    let files = [wasm.to_str().unwrap(), toml.to_str().unwrap()];
    if let Release::SignedBy(keys) | Release::TamperedAfterSigning(keys) = release {
        let key = keys.join("loanhost.key");
        let sign = ["sign", "--key", key.to_str().unwrap(), files[0], files[1]];
        let (ok, _, why) = loanhost(&sign, &[]).await;
        assert!(ok, "sign: {why}");
    }
    if let Release::TamperedAfterSigning(_) = release {
        // A custom section appended: still a valid component, no longer the signed bytes.
        let mut bytes = std::fs::read(&wasm).unwrap();
        bytes.extend_from_slice(&[0, 2, 1, b'x']);
        std::fs::write(&wasm, bytes).unwrap();
    }
    let mut env = env.to_vec();
    if !env
        .iter()
        .any(|(k, _)| *k == "LOANHOST_REGISTRY_PLAIN_HTTP")
    {
        env.push(("LOANHOST_REGISTRY_PLAIN_HTTP", registry.host.clone()));
    }
    let mut push = vec!["push", files[0], files[1], reference];
    if !matches!(
        release,
        Release::SignedBy(_) | Release::TamperedAfterSigning(_)
    ) {
        push.push("--unsigned");
    }
    let (ok, digest, why) = loanhost(&push, &env).await;
    assert!(ok, "push: {why}");
    digest.trim().to_string()
}

/// Moves the tag `live` to `digest` with skopeo, as an operator rolls back.
pub(crate) fn retag(registry: &Registry, digest: &str) {
    crate::helpers::run(
        std::process::Command::new("skopeo")
            .args(["copy", "--src-tls-verify=false", "--dest-tls-verify=false"])
            .arg(format!("docker://{}/team/revision@{digest}", registry.host))
            .arg(format!("docker://{}/team/revision:live", registry.host)),
    );
}

/// Why the host refuses what `reference` names now, if it does.
fn refusal(app: &TestApp, reference: &str) -> Option<String> {
    app.plugins.registry().refusals().get(reference).cloned()
}

/// The revision `revision` answers, if it is served.
pub(crate) async fn revision(app: &TestApp) -> Option<String> {
    let reply = app
        .rpc(
            "agent-token",
            "tools/call",
            json!({"name": "revision", "arguments": {}}),
        )
        .await;
    reply["result"]["structuredContent"]["revision"]
        .as_str()
        .map(str::to_string)
}

pub(crate) fn follower(
    registry: &Registry,
    reference: &str,
    cache: &std::path::Path,
    unsigned: bool,
) -> AppOptions {
    let mut options = AppOptions::default();
    options.env.extend([
        ("LOANHOST_PLUGIN_REFS", reference.to_string()),
        ("LOANHOST_REGISTRY_PLAIN_HTTP", registry.host.clone()),
        ("LOANHOST_REGISTRY_INTERVAL_SECS", "1".to_string()),
        ("LOANHOST_CACHE_DIR", cache.display().to_string()),
    ]);
    if unsigned {
        options
            .env
            .push(("LOANHOST_REGISTRY_ALLOW_UNSIGNED", "true".to_string()));
    }
    options
}

#[tokio::test]
async fn a_host_follows_a_tag_through_a_move_a_bad_release_a_rollback_and_a_restart_without_the_registry(
) {
    // Arrange: revision a under the tag `live`, revision b pushed beside it.
    let registry = Registry::start(None, false).await;
    let live = registry.reference("team/revision:live");
    let a = push_revision(&registry, "revision-a", &live, Release::Unsigned).await;
    let kept = tempfile::tempdir().unwrap();
    let cache = kept.path().join("cache");
    let audit = kept.path().join("audit.jsonl");
    let mut options = follower(&registry, &live, &cache, true);
    options
        .env
        .push(("LOANHOST_AUDIT_LOG", audit.display().to_string()));
    let (options, metrics_port) = options.with_metrics();
    let app = spawn_app_with(options).await;

    // Act / Assert: served at start, before the listener bound.
    assert_eq!(revision(&app).await.as_deref(), Some("a"));

    // The tag moves to b: followed.
    let b = push_revision(&registry, "revision-b", &live, Release::Unsigned).await;
    assert_ne!(a, b);
    app.eventually("revision b is served", || async {
        revision(&app).await.as_deref() == Some("b")
    })
    .await;

    // Bad releases under the tag: a manifest that does not parse, then a component that
    // imports WASI; each refused with its reason, b keeps serving.
    push_revision(&registry, "revision-a", &live, Release::Broken).await;
    app.eventually("the bad release is refused", || async {
        refusal(&app, &live).is_some_and(|why| why.contains("revision.toml"))
    })
    .await;
    assert_eq!(revision(&app).await.as_deref(), Some("b"));
    push_revision(&registry, "revision-a", &live, Release::ImportingWasi).await;
    app.eventually("the WASI release is refused", || async {
        refusal(&app, &live).is_some_and(|why| why.contains("imports `wasi:filesystem"))
    })
    .await;
    assert_eq!(revision(&app).await.as_deref(), Some("b"));

    // Rollback: the tag names a's digest again (re-tagged by digest, as an operator would).
    retag(&registry, &a);
    app.eventually("revision a is served again", || async {
        revision(&app).await.as_deref() == Some("a")
    })
    .await;
    assert_eq!(refusal(&app, &live), None);
    let metrics = reqwest::get(format!("http://127.0.0.1:{metrics_port}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let served =
        format!("loanhost_plugin_served{{tool=\"revision\",source=\"{live}\",digest=\"{a}\"}} 1");
    assert!(metrics.contains(&served), "{served} not in:\n{metrics}");
    assert_eq!(
        metrics
            .matches("loanhost_plugin_served{tool=\"revision\"")
            .count(),
        1
    );
    for kind in ["loaded", "plugin"] {
        assert!(
            metrics.contains(&format!(
                "loanhost_registry_events_total{{kind=\"{kind}\"}}"
            )),
            "{kind}"
        );
    }
    let audited = std::fs::read_to_string(&audit).unwrap();
    let last: serde_json::Value = serde_json::from_str(audited.lines().last().unwrap()).unwrap();
    assert_eq!(
        (&last["pluginSource"], &last["artifactDigest"]),
        (&json!(live), &json!(a)),
        "the audit line names the artifact that answered"
    );

    // A restart while the registry is down serves the last verified artifact from the cache.
    drop(app);
    let options = follower(&registry, &live, &cache, true);
    drop(registry);
    let restarted = spawn_app_with(options).await;
    assert_eq!(revision(&restarted).await.as_deref(), Some("a"));
}

#[tokio::test]
async fn an_unsigned_artifact_is_not_served_from_a_registry_by_default() {
    // Arrange
    let registry = Registry::start(None, false).await;
    let live = registry.reference("team/revision:live");
    push_revision(&registry, "revision-a", &live, Release::Unsigned).await;
    let cache = registry.dir.path().join("host-cache");

    // Act
    let app = spawn_app_with(follower(&registry, &live, &cache, false)).await;

    // Assert
    assert_eq!(revision(&app).await, None);
    let why = refusal(&app, &live).unwrap_or_default();
    assert!(why.contains("registry sources must be signed"), "{why}");
}

/// A key pair written by `plugin keygen` into `dir`; its public key as
/// `LOANHOST_TRUSTED_KEYS` takes it.
async fn keygen(dir: &std::path::Path) -> String {
    let (ok, _, why) = loanhost(&["keygen", "--out", dir.to_str().unwrap()], &[]).await;
    assert!(ok, "keygen: {why}");
    let public = std::fs::read_to_string(dir.join("loanhost.pub")).unwrap();
    public.lines().last().unwrap().trim().to_string()
}

#[tokio::test]
async fn only_releases_signed_by_a_trusted_key_are_served_from_a_registry() {
    // Arrange: the fleet's key and another one; revision a signed with the fleet's key.
    let registry = Registry::start(None, false).await;
    let live = registry.reference("team/revision:live");
    let (ours, theirs) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let trusted = keygen(ours.path()).await;
    keygen(theirs.path()).await;
    push_revision(
        &registry,
        "revision-a",
        &live,
        Release::SignedBy(ours.path()),
    )
    .await;
    let cache = tempfile::tempdir().unwrap();
    let mut options = follower(&registry, &live, &cache.path().join("c"), false);
    options.env.push(("LOANHOST_TRUSTED_KEYS", trusted));
    let app = spawn_app_with(options).await;
    assert_eq!(revision(&app).await.as_deref(), Some("a"));
    let refused_with = |reason: &'static str| {
        let app = &app;
        let live = live.clone();
        async move {
            app.eventually(&format!("a release refused for {reason}"), || async {
                refusal(app, &live).is_some_and(|why| why.contains(reason))
            })
            .await;
        }
    };

    // Act / Assert: signed by another key, then tampered after signing: refused, a serves.
    push_revision(
        &registry,
        "revision-b",
        &live,
        Release::SignedBy(theirs.path()),
    )
    .await;
    refused_with("signature").await;
    assert_eq!(revision(&app).await.as_deref(), Some("a"));
    let untrusted = refusal(&app, &live);
    push_revision(
        &registry,
        "revision-b",
        &live,
        Release::TamperedAfterSigning(ours.path()),
    )
    .await;
    app.eventually("the tampered release is refused", || async {
        // Another digest, so another refusal (its text names the digest).
        let why = refusal(&app, &live);
        why != untrusted && why.is_some_and(|w| w.contains("signature"))
    })
    .await;
    assert_eq!(revision(&app).await.as_deref(), Some("a"));

    // Signed by the fleet's key: served.
    push_revision(
        &registry,
        "revision-b",
        &live,
        Release::SignedBy(ours.path()),
    )
    .await;
    app.eventually("revision b is served", || async {
        revision(&app).await.as_deref() == Some("b")
    })
    .await;
}

#[tokio::test]
async fn a_registry_that_answers_garbage_changes_nothing() {
    // Arrange: revision a served from the registry; then the registry's address answers every
    // request with 200 and bytes that are no manifest.
    let registry = Registry::start(None, false).await;
    let live = registry.reference("team/revision:live");
    push_revision(&registry, "revision-a", &live, Release::Unsigned).await;
    let cache = tempfile::tempdir().unwrap();
    let app = spawn_app_with(follower(&registry, &live, &cache.path().join("c"), true)).await;
    assert_eq!(revision(&app).await.as_deref(), Some("a"));
    let host = registry.host.clone();
    drop(registry);
    // The registry's process is killed, not waited for: its port is free once it is gone.
    let mut bound = None;
    for _ in 0..1200 {
        match tokio::net::TcpListener::bind(&host).await {
            Ok(l) => {
                bound = Some(l);
                break;
            }
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
        }
    }
    let listener = bound.expect("the registry's port was freed within a minute");
    let garbage = axum::Router::new().fallback(|| async {
        (
            [("content-type", "application/vnd.oci.image.manifest.v1+json")],
            "{\"schemaVersion\": 2, \"layers\": \"not a list\"",
        )
    });
    let server = tokio::spawn(async move { axum::serve(listener, garbage).await });

    // Act: the follower's next rounds read the garbage.
    app.eventually("the garbage is refused", || async {
        refusal(&app, &live).is_some()
    })
    .await;

    // Assert: said why, and still serving a.
    let why = refusal(&app, &live).unwrap();
    assert!(why.contains("the manifest does not parse"), "{why}");
    assert_eq!(revision(&app).await.as_deref(), Some("a"));
    server.abort();
}

/// Overwrites the last byte of the file at `path` (its size unchanged).
fn flip_last_byte(path: &std::path::Path) {
    let mut bytes = std::fs::read(path).unwrap();
    *bytes.last_mut().unwrap() ^= 0xff;
    std::fs::write(path, bytes).unwrap();
}

#[tokio::test]
async fn a_blob_or_a_cache_entry_whose_bytes_do_not_match_its_digest_is_never_served() {
    // Arrange: revision a served; revision b pushed, then its component's bytes changed in the
    // registry's own storage (same size), as a corrupted or compromised store would serve them.
    let registry = Registry::start(None, false).await;
    let live = registry.reference("team/revision:live");
    let a = push_revision(&registry, "revision-a", &live, Release::Unsigned).await;
    let kept = tempfile::tempdir().unwrap();
    let cache = kept.path().join("cache");
    let app = spawn_app_with(follower(&registry, &live, &cache, true)).await;
    assert_eq!(revision(&app).await.as_deref(), Some("a"));
    let hex = format!("{:x}", sha2::Sha256::digest(fixture_wasm("revision-b")));
    push_revision(&registry, "revision-b", &live, Release::Unsigned).await;
    let blobs = registry
        .dir
        .path()
        .join("data/docker/registry/v2/blobs/sha256");
    flip_last_byte(&blobs.join(&hex[..2]).join(&hex).join("data"));

    // Act / Assert: the follower refuses b for its component's digest and keeps serving a.
    app.eventually("the corrupted blob is refused", || async {
        refusal(&app, &live).is_some()
    })
    .await;
    let why = refusal(&app, &live).unwrap();
    assert!(
        why.contains("revision.wasm") && why.contains("digest"),
        "{why}"
    );
    assert_eq!(revision(&app).await.as_deref(), Some("a"));
    assert!(!cache.join("oci").join(&hex).exists());

    // A cache entry changed on disk is not served at a restart without the registry.
    drop(app);
    let entry = cache.join("oci").join(a.trim_start_matches("sha256:"));
    flip_last_byte(&entry.join("revision.wasm"));
    let options = follower(&registry, &live, &cache, true);
    drop(registry);
    let restarted = spawn_app_with(options).await;
    assert_eq!(revision(&restarted).await, None);
    let why = refusal(&restarted, &live).unwrap_or_default();
    assert!(
        why.contains("cached layer revision.wasm: its bytes have the digest"),
        "{why}"
    );
}
