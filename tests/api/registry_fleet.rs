//! A fleet following one registry tag on one PostgreSQL: two `loanhost serve` processes under
//! load while the tag moves three times (a good release, a bad one, a rollback) answer every
//! call, and each host follows each step in its first resolution after it; and hosts told at
//! once through PostgreSQL (`plugin refresh`, or the host that saw the move first).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::io::AsyncBufReadExt;

use crate::helpers::{
    call_at, free_port, fresh_postgres_database, loanhost_binary, signing_pem, users, TODAY,
};
use crate::registry::{loanhost, Registry};
use crate::registry_follow::{push_revision, retag, Release};

/// A `loanhost serve` process following `reference`, stopped when dropped.
pub(crate) struct Host {
    child: tokio::process::Child,
    base: String,
    metrics: String,
    token: String,
    client: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl Host {
    /// Starts the debug binary on loopback ports with a cache of its own, on `database`,
    /// resolving `reference` every `interval` seconds; returns once it says it listens.
    pub(crate) async fn start(
        registry: &str,
        reference: &str,
        database: &str,
        interval: u64,
    ) -> Host {
        let dir = tempfile::tempdir().unwrap();
        let (port, metrics_port) = (free_port(), free_port());
        let cache = dir.path().join("cache");
        std::fs::create_dir_all(dir.path().join("plugins")).unwrap();
        std::fs::create_dir_all(&cache).unwrap();
        std::fs::write(cache.join("dev-idp-rsa.pem"), signing_pem()).unwrap();
        let env: BTreeMap<String, String> = [
            ("LOANHOST_LISTEN", format!("127.0.0.1:{port}")),
            ("LOANHOST_BASE_URL", format!("http://127.0.0.1:{port}")),
            (
                "LOANHOST_METRICS_LISTEN",
                format!("127.0.0.1:{metrics_port}"),
            ),
            (
                "LOANHOST_PLUGIN_DIR",
                dir.path().join("plugins").display().to_string(),
            ),
            ("LOANHOST_CACHE_DIR", cache.display().to_string()),
            ("LOANHOST_TODAY", TODAY.to_string()),
            ("LOANHOST_DEV_IDP", "true".to_string()),
            ("LOANHOST_AUDIT_LOG", "off".to_string()),
            ("LOANHOST_DATABASE_URL", database.to_string()),
            ("LOANHOST_PLUGIN_REFS", reference.to_string()),
            ("LOANHOST_REGISTRY_PLAIN_HTTP", registry.to_string()),
            ("LOANHOST_REGISTRY_INTERVAL_SECS", interval.to_string()),
            ("LOANHOST_REGISTRY_ALLOW_UNSIGNED", "true".to_string()),
            // The hosts share one caller's budgets (decision 0048): this test's callers call
            // without pause on both, and are not what it is about.
            ("LOANHOST_CALLER_MAX_CONCURRENT", "1000".to_string()),
            ("LOANHOST_CALLER_CALLS_PER_MINUTE", "1000000".to_string()),
            (
                "LOANHOST_CALLER_PLUGIN_SECONDS_PER_MINUTE",
                "100000".to_string(),
            ),
            (
                "LOANHOST_CALLER_RESULT_MIB_PER_MINUTE",
                "1000000".to_string(),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let config = loanhost::config::Config::from_map(&env).unwrap();
        let key = loanhost::oauth::devidp::SigningKey::from_pem(signing_pem()).unwrap();
        let email = &users()[0].agent.email;
        let token = key
            .mint(
                &config.idp.issuer,
                email,
                &config.mcp_audience,
                "offline_access",
                Duration::from_secs(3600),
            )
            .unwrap();
        let mut child = tokio::process::Command::new(loanhost_binary().expect("the binary"))
            .arg("serve")
            .env_clear()
            .envs(std::env::vars().filter(|(k, _)| !k.starts_with("LOANHOST_")))
            .envs(&env)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("loanhost listening") {
                break;
            }
        }
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Host {
            child,
            base: format!("http://127.0.0.1:{port}"),
            metrics: format!("http://127.0.0.1:{metrics_port}/metrics"),
            token,
            client: reqwest::Client::new(),
            _dir: dir,
        }
    }

    /// What `revision` answers: `Some(revision)`, or `None` with the reply when the call failed.
    async fn revision(&self) -> Result<String, String> {
        let reply = call_at(&self.client, &self.base, &self.token, "revision", json!({})).await?;
        reply["result"]["structuredContent"]["revision"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| reply.to_string())
    }

    /// The process's resident memory now, in KiB.
    pub(crate) fn resident_kib(&self) -> u64 {
        let pid = self.child.id().expect("running");
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }

    /// The value of the metric line that starts with `series`, if it is there.
    pub(crate) async fn metric(&self, series: &str) -> Option<f64> {
        let text = reqwest::get(&self.metrics).await.ok()?.text().await.ok()?;
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
    }

    /// Successful resolutions of `reference` so far.
    async fn resolutions(&self, reference: &str) -> f64 {
        let series = format!("loanhost_registry_resolutions_total{{kind=\"{reference}\"}}");
        self.metric(&series).await.unwrap_or(0.0)
    }

    /// Waits until the host serves `digest` for `reference`; the resolution it was taken in.
    async fn serves(&self, reference: &str, digest: &str) -> f64 {
        let served = format!(
            "loanhost_plugin_served{{tool=\"revision\",source=\"{reference}\",digest=\"{digest}\"}}"
        );
        self.reaches(&served, 1.0).await;
        let taken = format!("loanhost_registry_taken_at_resolution{{kind=\"{reference}\"}}");
        self.metric(&taken).await.unwrap()
    }

    /// Waits until the metric line `series` reads at least `at_least`.
    pub(crate) async fn reaches(&self, series: &str, at_least: f64) {
        for _ in 0..6000 {
            if self.metric(series).await.is_some_and(|v| v >= at_least) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{} never reached {series} {at_least}", self.base);
    }
}

/// A PostgreSQL database that knows the test callers.
pub(crate) async fn database() -> String {
    let url = fresh_postgres_database().await;
    let db = loanhost::data::Db::open(&url).await.unwrap();
    for u in users() {
        db.upsert_agent(&u.agent).await.unwrap();
    }
    url
}

#[tokio::test]
async fn two_host_processes_follow_each_move_of_a_tag_in_one_resolution_without_a_failed_call() {
    // Arrange: two processes on one PostgreSQL following `live` (revision a), every second,
    // and two callers per host calling `revision` without pause (bounded in count).
    let registry = Registry::start(None, false).await;
    let live = registry.reference("team/revision:live");
    let a = push_revision(&registry, "revision-a", &live, Release::Unsigned).await;
    let url = database().await;
    let hosts = [
        Arc::new(Host::start(&registry.host, &live, &url, 1).await),
        Arc::new(Host::start(&registry.host, &live, &url, 1).await),
    ];
    let stop = Arc::new(AtomicBool::new(false));
    let mut load = Vec::new();
    for host in hosts.iter().chain(hosts.iter()) {
        let (host, stop) = (host.clone(), stop.clone());
        load.push(tokio::spawn(async move {
            let mut answers = Vec::new();
            for _ in 0..50_000 {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                answers.push(host.revision().await);
            }
            answers
        }));
    }
    // Each step is followed in the first resolution that starts after it: at most two after
    // the step is done (one may have been under way).
    let followed = |digest: String| {
        let (hosts, live) = (hosts.clone(), live.clone());
        async move {
            let before = [
                hosts[0].resolutions(&live).await,
                hosts[1].resolutions(&live).await,
            ];
            for (host, before) in hosts.iter().zip(before) {
                let taken = host.serves(&live, &digest).await;
                assert!(
                    taken <= before + 2.0,
                    "taken in resolution {taken}, {before} before the move"
                );
            }
        }
    };
    for host in &hosts {
        host.serves(&live, &a).await;
    }

    // Act / Assert: a good release, a bad one, a rollback.
    let b = push_revision(&registry, "revision-b", &live, Release::Unsigned).await;
    followed(b.clone()).await;
    push_revision(&registry, "revision-a", &live, Release::Broken).await;
    let refused = [
        hosts[0].resolutions(&live).await,
        hosts[1].resolutions(&live).await,
    ];
    for (host, before) in hosts.iter().zip(refused) {
        host.reaches("loanhost_registry_events_total{kind=\"plugin\"}", 1.0)
            .await;
        let series = format!("loanhost_registry_resolutions_total{{kind=\"{live}\"}}");
        host.reaches(&series, before + 2.0).await;
        host.serves(&live, &b).await;
        assert_eq!(host.revision().await.as_deref(), Ok("b"));
    }
    retag(&registry, &a);
    followed(a.clone()).await;
    stop.store(true, Ordering::Relaxed);
    let mut answers = Vec::new();
    for task in load {
        answers.extend(task.await.unwrap());
    }

    // Assert: every call answered, by a or b.
    let failed: Vec<_> = answers
        .iter()
        .filter(|r| !matches!(r.as_deref(), Ok("a" | "b")))
        .collect();
    assert!(answers.len() > 100, "{} calls", answers.len());
    assert!(
        failed.is_empty(),
        "{} of {} calls failed: {:?}",
        failed.len(),
        answers.len(),
        &failed[..failed.len().min(5)]
    );
}

#[tokio::test]
async fn hosts_are_told_at_once_through_postgresql() {
    // Arrange: two hosts that resolve only hourly, listening for notices.
    let registry = Registry::start(None, false).await;
    let live = registry.reference("team/revision:live");
    let a = push_revision(&registry, "revision-a", &live, Release::Unsigned).await;
    let url = database().await;
    let hourly = [
        Host::start(&registry.host, &live, &url, 3600).await,
        Host::start(&registry.host, &live, &url, 3600).await,
    ];
    for host in &hourly {
        host.serves(&live, &a).await;
        host.reaches("loanhost_registry_notices_listening", 1.0)
            .await;
    }

    // Act / Assert: after a move, an operator's `plugin refresh` brings both to it.
    let b = push_revision(&registry, "revision-b", &live, Release::Unsigned).await;
    let env = [("LOANHOST_DATABASE_URL", url.clone())];
    let (ok, out, why) = loanhost(&["refresh", &live], &env).await;
    assert!(ok && out.contains(&live), "{out} {why}");
    for host in &hourly {
        host.serves(&live, &b).await;
    }

    // A host that resolves every second sees the next move first and tells the others.
    let eager = Host::start(&registry.host, &live, &url, 1).await;
    eager.serves(&live, &b).await;
    retag(&registry, &a);
    eager.serves(&live, &a).await;
    for host in &hourly {
        host.serves(&live, &a).await;
        assert_eq!(host.revision().await.as_deref(), Ok("a"));
    }

    // SQLite has nobody to tell: said so.
    let sqlite = [("LOANHOST_DATABASE_URL", "sqlite::memory:".to_string())];
    let (ok, _, why) = loanhost(&["refresh"], &sqlite).await;
    assert!(
        !ok && why.contains("SQLite, which serves one host"),
        "{why}"
    );
}
