//! Registry references a host follows (`LOANHOST_PLUGIN_REFS`): each one is resolved at start
//! and then on an interval; a digest not served yet is pulled by digest into the cache (every
//! layer checked, `oci/`), loaded from the very bytes that were checked (signature, shape,
//! compilation off the request path) and only then swapped in. A reference that cannot be
//! resolved, or an artifact that is refused, leaves the tool serving what it served; at start
//! without a registry, the last verified artifact of each reference is served from the cache,
//! whose entries are checked against their digests on every read (`entries.rs`).
//!
//! A registry is hostile until shown otherwise: each reference is bound to one tool
//! (`binding.rs`), resolved independently of the others under one deadline for its resolve,
//! pull and load (`LOANHOST_REGISTRY_TIMEOUT_SECS`), and a notice from the database only
//! wakes the follower (coalesced, its payload not kept), never more often than
//! [`MIN_NOTICE_GAP`].

mod entries;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::loader::PluginFiles;
use super::oci::{self, Digest, RegistryOptions};
pub use crate::config::FollowOptions;
use crate::data::notices::{self, Notice, EVERY_REFERENCE, PLUGIN_REFS};
use crate::data::Db;
use crate::plugins::Plugins;
pub use crate::references::{bind, bind_all, Followed};
use crate::telemetry::Metrics;
use entries::{Entries, Failure};

/// The least time between two rounds that notices start: a flood of notices costs the
/// registries one round per gap, whatever its size.
pub const MIN_NOTICE_GAP: Duration = Duration::from_secs(2);

/// One followed reference and the digest it serves (one round at a time).
struct Slot {
    followed: Followed,
    served: tokio::sync::Mutex<Option<Digest>>,
}

/// Follows registry references and keeps the tools they name in the registry.
pub struct Follower {
    plugins: Arc<Plugins>,
    options: FollowOptions,
    /// Credentials, TLS roots, plain HTTP (`LOANHOST_REGISTRY_*`).
    registry: RegistryOptions,
    entries: Entries,
    /// The database whose hosts tell each other of new artifacts (PostgreSQL only).
    notices: Option<Db>,
    slots: Vec<Slot>,
    /// References that cannot be followed at all, with the reason.
    unbound: Vec<(String, String)>,
    /// The digest each reference last named that was refused for what it is (not for a
    /// network failure): not fetched, loaded or logged again until the reference moves.
    refused: std::sync::Mutex<BTreeMap<String, Digest>>,
}

/// What one round did for a reference.
enum Round {
    /// Its tool now serves a new digest.
    Loaded(Digest),
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
    /// hosts on it when it swaps in a new artifact, and resolves soon when told.
    pub fn new(
        plugins: Arc<Plugins>,
        options: FollowOptions,
        registry: RegistryOptions,
        cache: &Path,
        notices: Option<Db>,
    ) -> Arc<Follower> {
        let mut slots = Vec::new();
        let mut unbound = Vec::new();
        match bind_all(&options.references) {
            Ok(all) => slots.extend(all.into_iter().map(|followed| Slot {
                followed,
                served: tokio::sync::Mutex::new(None),
            })),
            Err(why) => unbound.extend(options.references.iter().map(|r| (r.clone(), why.clone()))),
        }
        Arc::new(Follower {
            plugins,
            options,
            registry,
            entries: Entries {
                dir: cache.join("oci"),
            },
            notices,
            slots,
            unbound,
            refused: Default::default(),
        })
    }

    /// Resolves every reference once, each on its own (one slow registry delays only its
    /// own references), and brings its tool to the digest it names.
    pub async fn resolve(&self) -> FollowReport {
        let mut report = FollowReport::default();
        for (reference, why) in &self.unbound {
            self.plugins
                .registry()
                .set_refusal(reference, Some(why.clone()));
            report.failed.push((reference.clone(), why.clone()));
        }
        let rounds = self.slots.iter().map(|slot| self.round(slot));
        for (slot, outcome) in self
            .slots
            .iter()
            .zip(futures_util::future::join_all(rounds).await)
        {
            let reference = &slot.followed.reference;
            match outcome {
                Ok(Some(digest)) => report.loaded.push((
                    reference.clone(),
                    slot.followed.tool.clone(),
                    digest.to_string(),
                )),
                Ok(None) => {}
                Err(why) => report.failed.push((reference.clone(), why)),
            }
        }
        report
    }

    /// Tells the other hosts on the database that `reference` moved.
    async fn tell_others(&self, reference: &str) {
        if let Some(db) = &self.notices {
            if let Err(e) = notices::notify(db, PLUGIN_REFS, reference).await {
                tracing::warn!(%reference, error = %e, "cannot tell the other hosts of the new artifact");
            }
        }
    }

    /// One reference's round under its deadline: the digest now served when it changed,
    /// `Err` with the reason (cleaned) when it could not be followed.
    async fn round(&self, slot: &Slot) -> Result<Option<Digest>, String> {
        let reference = &slot.followed.reference;
        let mut served = slot.served.lock().await;
        let deadline = self.options.deadline;
        let outcome = tokio::time::timeout(deadline, self.follow(&slot.followed, served.as_ref()))
            .await
            .unwrap_or_else(|_| {
                Err((
                    "timeout",
                    format!(
                        "{reference}: not resolved, pulled and loaded within {} s \
                         (LOANHOST_REGISTRY_TIMEOUT_SECS)",
                        deadline.as_secs()
                    ),
                ))
            });
        match outcome {
            Ok(Round::Loaded(now)) => {
                *served = Some(now.clone());
                drop(served);
                self.plugins.registry().set_refusal(reference, None);
                self.tell_others(reference).await;
                Ok(Some(now))
            }
            Ok(Round::Unchanged) => {
                self.plugins.registry().set_refusal(reference, None);
                Ok(None)
            }
            Ok(Round::StillRefused) => Ok(None),
            Err((kind, why)) => {
                let why = oci::clean(&why);
                let keeps = served.is_some();
                tracing::error!(%reference, reason = kind, error = %why, previous_version_serving = keeps, "registry reference not followed");
                Metrics::count(&self.plugins.metrics().registry_events, kind);
                self.plugins
                    .registry()
                    .set_refusal(reference, Some(why.clone()));
                Err(why)
            }
        }
    }

    /// One reference's round, or `Err((metric kind, reason))` when nothing changed because of
    /// a failure.
    async fn follow(&self, followed: &Followed, now: Option<&Digest>) -> Result<Round, Failure> {
        let reference = followed.reference.as_str();
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
            Err((kind, why)) => match (now, self.entries.last_verified(reference)) {
                // At start without a registry: the last artifact this host verified.
                (None, Some(digest)) => {
                    tracing::warn!(%reference, %digest, reason = kind, error = %oci::clean(&why), "registry not followed: serving the cached artifact");
                    digest
                }
                _ => return Err((kind, why)),
            },
        };
        if now == Some(&digest) {
            Metrics::count(&metrics.registry_events, "unchanged");
            return Ok(Round::Unchanged);
        }
        let refused = |r: &str| {
            self.refused
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(r)
                .cloned()
        };
        if refused(reference).as_ref() == Some(&digest) {
            return Ok(Round::StillRefused);
        }
        let outcome = self.take(followed, &digest).await;
        if let (Ok(Round::Loaded(_)), Some(n)) = (&outcome, resolution) {
            metrics
                .registry_taken_at
                .get_or_create(&label)
                .set(n as i64);
        }
        if let Err((kind, _)) = &outcome {
            if !matches!(*kind, "unreachable" | "timeout") {
                self.refused
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(reference.to_string(), digest.clone());
            }
        }
        outcome
    }

    /// Fetches, loads and swaps in the artifact `digest` of `followed`.
    async fn take(&self, followed: &Followed, digest: &Digest) -> Result<Round, Failure> {
        let reference = followed.reference.as_str();
        let mut stale = None;
        let events = &self.plugins.metrics().registry_events;
        let pulled = self
            .entries
            .get(reference, digest, &self.registry, &mut stale, || {
                Metrics::count(events, "pulled")
            })
            .await;
        if stale.is_some() {
            Metrics::count(&self.plugins.metrics().registry_events, "cache_mismatch");
        }
        let verified = pulled.map_err(|(kind, why)| match &stale {
            Some(s) => (kind, format!("{why} (the cached copy was refused: {s})")),
            None => (kind, why),
        })?;
        // The component's file name, which the loader holds its manifest's tool name to.
        let tool = verified.name.clone();
        if tool != followed.tool {
            return Err((
                "tool",
                format!(
                    "{reference} ({digest}): the artifact is tool {}, but this reference is bound \
                     to tool {} (bind it as <tool>=oci://… to serve another)",
                    oci::clean(&tool),
                    followed.tool
                ),
            ));
        }
        let dir = self.entries.dir.join(digest.hex());
        let files = PluginFiles::in_memory(&dir, &tool, verified.files);
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
        // One source per tool: a tool the plugin folder serves is not taken over.
        let registry = self.plugins.registry();
        let other = registry.get(&tool).and_then(|p| match &p.origin {
            Some(o) if o.source == reference => None,
            Some(o) => Some(o.source.clone()),
            None => Some("the plugin folder".to_string()),
        });
        if let Some(other) = other {
            return Err((
                "conflict",
                format!("{reference}: tool {tool} is already served from {other}"),
            ));
        }
        let replaced = self.plugins.install(plugin, reference, digest.as_str());
        self.entries.remember(reference, digest);
        Metrics::count(&self.plugins.metrics().registry_events, "loaded");
        tracing::info!(plugin = %tool, %reference, %digest, replaced, "plugin loaded from the registry");
        Ok(Round::Loaded(digest.clone()))
    }

    /// The digest a reference names now: its own when pinned, else the registry's for the
    /// tag, checked to be a digest either way.
    async fn digest_of(&self, reference: &str) -> Result<Digest, Failure> {
        let parsed = oci::parse_reference(reference).map_err(|e| ("artifact", e.to_string()))?;
        if let Some(d) = parsed.digest() {
            return Digest::parse(d).map_err(|why| ("digest", format!("{reference}: {why}")));
        }
        oci::resolve(reference, &self.registry)
            .await
            .map_err(|e| match e {
                oci::OciError::Digest { .. } => ("digest", e.to_string()),
                oci::OciError::Artifact { .. } => ("artifact", e.to_string()),
                _ => ("unreachable", e.to_string()),
            })
    }

    /// Resolves each reference again every interval, on a loop of its own (a reference
    /// whose registry is slow holds up only itself), and soon when another host or an
    /// operator says a reference it follows moved, until the handle is aborted. A notice only
    /// bumps a counter (notices arriving together start one round of each loop, and their
    /// payloads are not kept), and rounds that notices start keep [`MIN_NOTICE_GAP`] between
    /// them.
    pub fn spawn(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            let (heard, woken) = tokio::sync::watch::channel(0u64);
            let listening = this.plugins.metrics().registry_listening.clone();
            let events = this.plugins.metrics().registry_events.clone();
            let followed: Vec<String> = this
                .slots
                .iter()
                .map(|s| s.followed.reference.clone())
                .collect();
            let _listener = this.notices.as_ref().and_then(|db| {
                notices::listen(db, PLUGIN_REFS, move |notice| match notice {
                    Notice::Listening => {
                        listening.set(1);
                    }
                    Notice::Lost => {
                        listening.set(0);
                    }
                    Notice::Payload(payload) => {
                        if payload == EVERY_REFERENCE || followed.contains(&payload) {
                            Metrics::count(&events, "notice");
                            heard.send_modify(|n| *n = n.wrapping_add(1));
                        }
                    }
                })
            });
            let mut loops = tokio::task::JoinSet::new();
            for index in 0..this.slots.len() {
                let (this, woken) = (this.clone(), woken.clone());
                loops.spawn(async move { this.follow_forever(index, woken).await });
            }
            while loops.join_next().await.is_some() {}
            std::future::pending::<()>().await;
        })
    }

    /// The loop of reference `index`: a round every interval, or after a notice.
    async fn follow_forever(&self, index: usize, mut woken: tokio::sync::watch::Receiver<u64>) {
        let slot = &self.slots[index];
        let mut next = tokio::time::Instant::now() + self.options.interval;
        let mut last_noticed: Option<tokio::time::Instant> = None;
        let mut listening = true;
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(next) => {}
                changed = woken.changed(), if listening => {
                    if changed.is_err() {
                        // No notices (SQLite, or the listener is gone): the interval only.
                        listening = false;
                        continue;
                    }
                    if let Some(at) = last_noticed {
                        tokio::time::sleep_until(at + MIN_NOTICE_GAP).await;
                    }
                    woken.borrow_and_update();
                    last_noticed = Some(tokio::time::Instant::now());
                }
            }
            let _ = self.round(slot).await;
            next = tokio::time::Instant::now() + self.options.interval;
        }
    }
}
