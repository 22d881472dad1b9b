//! Hot reload: watches the plugin directory and applies additions, replacements and
//! removals without a restart. A plugin that fails to load is reported and the previous
//! version keeps serving; in-flight calls finish on the version they started with.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify::Watcher as _;
use tokio::sync::{mpsc, Mutex};

use super::loader::PluginFiles;
use crate::plugins::host::Plugins;
use crate::telemetry::Metrics;

/// How long file events are collected before a rescan (writes come in bursts).
const DEBOUNCE: Duration = Duration::from_millis(150);
/// A rescan also runs this often, in case a file event was missed.
const RESCAN_EVERY: Duration = Duration::from_secs(2);

/// What a scan changed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ScanReport {
    /// Tools newly loaded or replaced.
    pub loaded: Vec<String>,
    /// Tools removed because their files are gone.
    pub removed: Vec<String>,
    /// Tools whose files were refused, with the reason (the previous version, if any,
    /// keeps serving).
    pub failed: Vec<(String, String)>,
}

/// Identity of a file's current contents, cheap to compute: size, mtime and inode.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp(Vec<Option<(u64, i128, u64)>>);

fn stamp(files: &PluginFiles) -> Stamp {
    let one = |p: &Path| {
        let m = std::fs::metadata(p).ok()?;
        let mtime = m
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos() as i128)
            .unwrap_or(0);
        #[cfg(unix)]
        let ino = std::os::unix::fs::MetadataExt::ino(&m);
        #[cfg(not(unix))]
        let ino = 0;
        Some((m.len(), mtime, ino))
    };
    Stamp(vec![
        one(&files.wasm),
        one(&files.manifest),
        one(&files.signature),
        one(&files.manifest_signature),
        one(&files.view),
        one(&files.view_signature),
    ])
}

/// Scans a plugin directory and keeps the registry in step with it.
pub struct Reloader {
    plugins: Arc<Plugins>,
    dir: PathBuf,
    seen: Mutex<BTreeMap<String, Stamp>>,
}

impl Reloader {
    /// A reloader for `dir`; nothing is loaded until [`Reloader::scan`].
    pub fn new(plugins: Arc<Plugins>, dir: PathBuf) -> Arc<Reloader> {
        Arc::new(Reloader {
            plugins,
            dir,
            seen: Mutex::new(BTreeMap::new()),
        })
    }

    /// Brings the registry in line with the directory once.
    pub async fn scan(&self) -> ScanReport {
        let mut seen = self.seen.lock().await;
        let mut report = ScanReport::default();
        let (complete, partial) = match list_plugins(&self.dir) {
            Ok(found) => found,
            Err(e) => {
                tracing::error!(dir = %self.dir.display(), error = %e, "cannot read the plugin directory");
                return report;
            }
        };

        // Removals: a tool of this folder whose .wasm or .toml is gone (tools that registry
        // references serve are the follower's).
        let registry = self.plugins.registry();
        let mine: BTreeSet<String> = seen.keys().cloned().collect();
        for name in mine.iter().filter(|n| !complete.contains(*n)) {
            if registry.remove(name).is_some() {
                Metrics::count(&self.plugins.metrics().plugin_events, "removed");
                self.plugins.metrics().served(name, None);
                tracing::info!(plugin = %name, "plugin removed");
                report.removed.push(name.clone());
            }
        }
        seen.retain(|name, _| complete.contains(name) || partial.contains(name));
        for name in registry.refusals().keys() {
            if mine.contains(name) && !complete.contains(name) && !partial.contains(name) {
                registry.set_refusal(name, None);
            }
        }
        for name in &partial {
            let files = PluginFiles::in_dir(&self.dir, name);
            let st = stamp(&files);
            if seen.get(name) != Some(&st) {
                let missing = if files.wasm.exists() {
                    &files.manifest
                } else {
                    &files.wasm
                };
                let reason = format!("{} is missing", missing.display());
                tracing::warn!(plugin = %name, "{reason}; plugin not loaded");
                registry.set_refusal(name, Some(reason.clone()));
                Metrics::count(&self.plugins.metrics().plugin_events, "refused");
                report.failed.push((name.clone(), reason));
                seen.insert(name.clone(), st);
            }
        }

        // Additions and replacements, loaded concurrently: a component that takes seconds to
        // compile (a Python or JavaScript runtime) does not hold up the others.
        let mut changed = Vec::new();
        for name in &complete {
            let files = PluginFiles::in_dir(&self.dir, name);
            let st = stamp(&files);
            if seen.get(name) == Some(&st) {
                continue;
            }
            seen.insert(name.clone(), st);
            changed.push((name, files));
        }
        let loads = changed.iter().map(|(_, files)| self.plugins.load(files));
        let results = futures_util::future::join_all(loads).await;
        for ((name, _), result) in changed.iter().zip(results) {
            let name: &String = name;
            match result {
                Ok(plugin) => {
                    let digest = plugin.digest.clone();
                    let signed = plugin.signed;
                    let replaced =
                        self.plugins
                            .install(plugin, "folder", &format!("sha256:{digest}"));
                    registry.set_refusal(name, None);
                    tracing::info!(plugin = %name, %digest, signed, replaced, "plugin loaded");
                    report.loaded.push(name.clone());
                }
                Err(e) => {
                    let keeps = registry.get(name).is_some();
                    tracing::error!(plugin = %name, error = %e, previous_version_serving = keeps, "plugin refused");
                    registry.set_refusal(name, Some(e.to_string()));
                    Metrics::count(&self.plugins.metrics().plugin_events, "refused");
                    report.failed.push((name.clone(), e.to_string()));
                }
            }
        }
        report
    }

    /// Watches the directory and rescans on changes (and every few seconds) until the
    /// returned handle is aborted or the process ends.
    pub fn spawn(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            let (tx, mut rx) = mpsc::channel::<()>(1);
            let watcher = notify::recommended_watcher(move |_event| {
                let _ = tx.try_send(());
            })
            .and_then(|mut w| {
                w.watch(&this.dir, notify::RecursiveMode::NonRecursive)?;
                Ok(w)
            });
            let _watcher = match watcher {
                Ok(w) => Some(w),
                Err(e) => {
                    tracing::warn!(dir = %this.dir.display(), error = %e, "cannot watch the plugin directory; rescanning periodically");
                    None
                }
            };
            loop {
                tokio::select! {
                    Some(()) = rx.recv() => tokio::time::sleep(DEBOUNCE).await,
                    _ = tokio::time::sleep(RESCAN_EVERY) => {}
                }
                while rx.try_recv().is_ok() {}
                this.scan().await;
            }
        })
    }
}

/// The tool stems in `dir` with both files, and those with only one of them. Names
/// starting with `.` (temporary files of an atomic install) are ignored.
fn list_plugins(dir: &Path) -> std::io::Result<(BTreeSet<String>, BTreeSet<String>)> {
    let mut wasm = BTreeSet::new();
    let mut toml = BTreeSet::new();
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with('.') {
            continue;
        }
        if let Some(stem) = name.strip_suffix(".wasm") {
            wasm.insert(stem.to_string());
        } else if let Some(stem) = name.strip_suffix(".toml") {
            toml.insert(stem.to_string());
        }
    }
    let complete: BTreeSet<String> = wasm.intersection(&toml).cloned().collect();
    let partial: BTreeSet<String> = wasm.symmetric_difference(&toml).cloned().collect();
    Ok((complete, partial))
}
