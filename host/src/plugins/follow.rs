//! Registry references a host follows (`LOANHOST_PLUGIN_REFS`): each one is resolved at start
//! and then on an interval; a digest not served yet is pulled by digest into the cache (every
//! layer checked, `oci.rs`), loaded as a plugin folder's files are (signature, shape,
//! compilation off the request path) and only then swapped in. A reference that cannot be
//! resolved, or an artifact that is refused, leaves the tool serving what it served; at start
//! without a registry, the last verified artifact of each reference is served from the cache,
//! whose entries are checked against their digests on every read (`oci/cache.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::sync::Mutex;

use super::loader::PluginFiles;
use super::oci::{self, RegistryOptions};
use super::Plugins;
use crate::data::notices::{self, Notice, EVERY_REFERENCE, PLUGIN_REFS};
use crate::data::Db;
use crate::telemetry::Metrics;

/// What a host follows, and how.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FollowOptions {
    /// `oci://…:tag` or `oci://…@sha256:…` references.
    pub references: Vec<String>,
    /// How often tags are resolved again.
    pub interval: Duration,
    /// Serve artifacts whose files are not signed by a trusted key (off: refused).
    pub allow_unsigned: bool,
}

/// The reference's current state: the digest served, the tool it is.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Served {
    digest: String,
    tool: String,
}

/// Follows registry references and keeps the tools they name in the registry.
pub struct Follower {
    plugins: Arc<Plugins>,
    options: FollowOptions,
    /// Credentials, TLS roots, plain HTTP (`LOANHOST_REGISTRY_*`).
    registry: RegistryOptions,
    cache: PathBuf,
    /// The database whose hosts tell each other of new artifacts (PostgreSQL only).
    notices: Option<Db>,
    served: Mutex<BTreeMap<String, Served>>,
    /// The digest each reference last named that was refused for what it is (not for a
    /// network failure): not fetched, loaded or logged again until the reference moves.
    refused: std::sync::Mutex<BTreeMap<String, String>>,
}

/// What one round did for a reference.
enum Round {
    /// Its tool now serves a new digest.
    Loaded(Served),
    /// It names the digest served.
    Unchanged,
    /// It names a digest already refused.
    StillRefused,
}

/// What one round changed, by reference.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FollowReport {
    /// References whose tool is now served at a new digest: (reference, tool, digest).
    pub loaded: Vec<(String, String, String)>,
    /// References that could not be followed this round, with the reason.
    pub failed: Vec<(String, String)>,
}

impl Follower {
    /// A follower reaching registries with `registry`, keeping its artifacts under `cache`
    /// (`LOANHOST_CACHE_DIR/oci`); with a PostgreSQL `notices` database, it tells the other
    /// hosts on it when it swaps in a new artifact, and resolves at once when told.
    pub fn new(
        plugins: Arc<Plugins>,
        options: FollowOptions,
        registry: RegistryOptions,
        cache: &Path,
        notices: Option<Db>,
    ) -> Arc<Follower> {
        Arc::new(Follower {
            plugins,
            options,
            registry,
            cache: cache.join("oci"),
            notices,
            served: Mutex::new(BTreeMap::new()),
            refused: Default::default(),
        })
    }

    /// Resolves every reference once and brings its tool to the digest it names.
    pub async fn resolve(&self) -> FollowReport {
        let mut report = FollowReport::default();
        let mut served = self.served.lock().await;
        for reference in &self.options.references {
            match self.follow(reference, &served).await {
                Ok(Round::Loaded(now)) => {
                    report
                        .loaded
                        .push((reference.clone(), now.tool.clone(), now.digest.clone()));
                    served.insert(reference.clone(), now);
                    self.plugins.registry().set_refusal(reference, None);
                }
                Ok(Round::Unchanged) => self.plugins.registry().set_refusal(reference, None),
                Ok(Round::StillRefused) => {}
                Err((kind, why)) => {
                    let keeps = served.contains_key(reference);
                    tracing::error!(%reference, reason = kind, error = %why, previous_version_serving = keeps, "registry reference not followed");
                    Metrics::count(&self.plugins.metrics().registry_events, kind);
                    self.plugins
                        .registry()
                        .set_refusal(reference, Some(why.clone()));
                    report.failed.push((reference.clone(), why));
                }
            }
        }
        drop(served);
        if let Some(db) = &self.notices {
            for (reference, _, _) in &report.loaded {
                if let Err(e) = notices::notify(db, PLUGIN_REFS, reference).await {
                    tracing::warn!(%reference, error = %e, "cannot tell the other hosts of the new artifact");
                }
            }
        }
        report
    }

    /// One reference's round, or `Err((metric kind, reason))` when nothing changed because of
    /// a failure.
    async fn follow(
        &self,
        reference: &str,
        served: &BTreeMap<String, Served>,
    ) -> Result<Round, (&'static str, String)> {
        let now = served.get(reference);
        let label = crate::telemetry::Label {
            kind: reference.to_string(),
        };
        let metrics = self.plugins.metrics();
        let mut resolution = None;
        let digest = match self.digest_of(reference).await {
            Ok(d) => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs() as i64);
                metrics.registry_resolved.get_or_create(&label).set(now);
                resolution = Some(metrics.registry_resolutions.get_or_create(&label).inc() + 1);
                d
            }
            Err(why) => match (now, self.last_verified(reference)) {
                // At start without a registry: the last artifact this host verified.
                (None, Some(digest)) => {
                    tracing::warn!(%reference, %digest, error = %why, "registry unreachable: serving the cached artifact");
                    digest
                }
                _ => return Err(("unreachable", why)),
            },
        };
        if now.is_some_and(|s| s.digest == digest) {
            Metrics::count(&self.plugins.metrics().registry_events, "unchanged");
            return Ok(Round::Unchanged);
        }
        let refused = |r: &str| {
            self.refused
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(r)
                .cloned()
        };
        if refused(reference).as_deref() == Some(digest.as_str()) {
            return Ok(Round::StillRefused);
        }
        let outcome = self.take(reference, &digest, served).await;
        if let (Ok(Round::Loaded(_)), Some(n)) = (&outcome, resolution) {
            metrics
                .registry_taken_at
                .get_or_create(&label)
                .set(n as i64);
        }
        if let Err((kind, _)) = &outcome {
            if *kind != "unreachable" {
                self.refused
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(reference.to_string(), digest.clone());
            }
        }
        outcome
    }

    /// Fetches, loads and swaps in the artifact `digest` of `reference`.
    async fn take(
        &self,
        reference: &str,
        digest: &str,
        served: &BTreeMap<String, Served>,
    ) -> Result<Round, (&'static str, String)> {
        let dir = self.fetch(reference, digest).await?;
        let tool = std::fs::read_dir(&dir)
            .ok()
            .into_iter()
            .flatten()
            .filter_map(|e| {
                e.ok()?
                    .file_name()
                    .to_str()?
                    .strip_suffix(".wasm")
                    .map(str::to_string)
            })
            .next()
            .ok_or((
                "artifact",
                format!("{reference}: the cached artifact has no component"),
            ))?;
        let files = PluginFiles::explicit(
            &dir.join(format!("{tool}.wasm")),
            &dir.join(format!("{tool}.toml")),
        );
        let plugin = self
            .plugins
            .load(&files)
            .await
            .map_err(|e| ("plugin", format!("{reference} ({digest}): {e}")))?;
        if !plugin.signed && !self.options.allow_unsigned {
            return Err((
                "unsigned",
                format!(
                    "{reference} ({digest}): not signed by a key of LOANHOST_TRUSTED_KEYS; \
                     registry sources must be signed (LOANHOST_REGISTRY_ALLOW_UNSIGNED)"
                ),
            ));
        }
        // One source per tool: another reference's, or the plugin folder's (a tool this
        // follower does not serve).
        let registry = self.plugins.registry();
        let mine = served
            .iter()
            .find(|(_, s)| s.tool == tool)
            .map(|(r, _)| r.as_str());
        let other = match mine {
            Some(r) if r != reference => Some(r.to_string()),
            Some(_) => None,
            None => registry.get(&tool).map(|_| "the plugin folder".to_string()),
        };
        if let Some(other) = other {
            return Err((
                "conflict",
                format!("{reference}: tool {tool} is already served from {other}"),
            ));
        }
        let replaced = self.plugins.install(plugin, reference, digest);
        self.remember(reference, digest);
        Metrics::count(&self.plugins.metrics().registry_events, "loaded");
        tracing::info!(plugin = %tool, %reference, %digest, replaced, "plugin loaded from the registry");
        Ok(Round::Loaded(Served {
            digest: digest.to_string(),
            tool,
        }))
    }

    /// The digest a reference names now: its own when pinned, else the registry's for the tag.
    async fn digest_of(&self, reference: &str) -> Result<String, String> {
        let parsed = oci::parse_reference(reference).map_err(|e| e.to_string())?;
        if let Some(d) = parsed.digest() {
            return Ok(d.to_string());
        }
        oci::resolve(reference, &self.registry)
            .await
            .map_err(|e| e.to_string())
    }

    /// The artifact's folder in the cache, pulled by digest when it is not there yet.
    async fn fetch(
        &self,
        reference: &str,
        digest: &str,
    ) -> Result<PathBuf, (&'static str, String)> {
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        let dir = self.cache.join(hex);
        let mut stale = String::new();
        if dir.is_dir() {
            match oci::cache::verify(&dir, digest) {
                Ok(()) => return Ok(dir),
                Err(why) => {
                    tracing::warn!(%reference, %digest, error = %why, "cached artifact does not match its digest: fetched again");
                    Metrics::count(&self.plugins.metrics().registry_events, "cache_mismatch");
                    std::fs::remove_dir_all(&dir)
                        .map_err(|e| ("artifact", format!("{}: {e}", dir.display())))?;
                    stale = format!(" (the cached copy was refused: {why})");
                }
            }
        }
        let pinned = oci::pinned(reference, digest).map_err(|e| ("artifact", e.to_string()))?;
        let partial = self.cache.join(format!(".{hex}.partial"));
        let _ = std::fs::remove_dir_all(&partial);
        Metrics::count(&self.plugins.metrics().registry_events, "pulled");
        let pulled = match oci::pull(&pinned, &partial, &self.registry).await {
            Ok(pulled) => pulled,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&partial);
                let kind = match e {
                    oci::OciError::Artifact { .. } | oci::OciError::Io { .. } => "artifact",
                    _ => "unreachable",
                };
                return Err((kind, format!("{e}{stale}")));
            }
        };
        let manifest = partial.join(oci::cache::MANIFEST_FILE);
        std::fs::write(&manifest, &pulled.manifest)
            .map_err(|e| ("artifact", format!("{}: {e}", manifest.display())))?;
        std::fs::rename(&partial, &dir)
            .map_err(|e| ("artifact", format!("{}: {e}", dir.display())))?;
        Ok(dir)
    }

    /// Where the last verified digest of `reference` is recorded.
    fn record(&self, reference: &str) -> PathBuf {
        self.cache
            .join("refs")
            .join(format!("{:x}", Sha256::digest(reference.as_bytes())))
    }

    fn remember(&self, reference: &str, digest: &str) {
        let path = self.record(reference);
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let partial = path.with_extension("partial");
        if std::fs::write(&partial, digest).is_ok() {
            let _ = std::fs::rename(&partial, &path);
        }
    }

    fn last_verified(&self, reference: &str) -> Option<String> {
        let digest = std::fs::read_to_string(self.record(reference)).ok()?;
        let digest = digest.trim();
        let hex = digest.strip_prefix("sha256:")?;
        (hex.len() == 64
            && hex.bytes().all(|b| b.is_ascii_hexdigit())
            && self.cache.join(hex).is_dir())
        .then(|| digest.to_string())
    }

    /// Resolves again every interval, and at once when another host or an operator says a
    /// reference it follows moved, until the handle is aborted.
    pub fn spawn(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            let (tx, mut heard) = tokio::sync::mpsc::unbounded_channel();
            let listening = this.plugins.metrics().registry_listening.clone();
            let listener = this.notices.as_ref().and_then(|db| {
                notices::listen(db, PLUGIN_REFS, move |notice| match notice {
                    Notice::Listening => {
                        listening.set(1);
                    }
                    Notice::Lost => {
                        listening.set(0);
                    }
                    Notice::Payload(reference) => {
                        let _ = tx.send(reference);
                    }
                })
            });
            let mut open = listener.is_some();
            let mut next = tokio::time::Instant::now() + this.options.interval;
            loop {
                tokio::select! {
                    _ = tokio::time::sleep_until(next) => {}
                    heard = heard.recv(), if open => match heard {
                        Some(reference) if this.follows(&reference) => {
                            Metrics::count(&this.plugins.metrics().registry_events, "notice");
                        }
                        Some(_) => continue,
                        None => {
                            open = false;
                            continue;
                        }
                    },
                }
                this.resolve().await;
                next = tokio::time::Instant::now() + this.options.interval;
            }
        })
    }

    /// Whether a notice's payload names a reference this host follows.
    fn follows(&self, payload: &str) -> bool {
        payload == EVERY_REFERENCE || self.options.references.iter().any(|r| r == payload)
    }
}
