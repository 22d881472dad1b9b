//! The registry: tool name -> loaded plugin. Readers take a snapshot without locking;
//! the reloader swaps in a new map, so in-flight calls keep the plugin they started with.

use std::collections::BTreeMap;
use std::sync::Arc;

use arc_swap::ArcSwap;

use super::loader::Plugin;

/// The loaded plugins, by tool name (sorted, so `tools/list` is stable).
#[derive(Default)]
pub struct Registry {
    tools: ArcSwap<BTreeMap<String, Arc<Plugin>>>,
    writer: std::sync::Mutex<()>,
    refused: std::sync::Mutex<BTreeMap<String, String>>,
}

impl Registry {
    /// The plugin serving `name`, if any.
    pub fn get(&self, name: &str) -> Option<Arc<Plugin>> {
        self.tools.load().get(name).cloned()
    }

    /// Every loaded plugin, by name.
    pub fn snapshot(&self) -> Arc<BTreeMap<String, Arc<Plugin>>> {
        self.tools.load_full()
    }

    /// Adds or replaces a plugin; returns the one it replaced.
    pub fn insert(&self, plugin: Arc<Plugin>) -> Option<Arc<Plugin>> {
        let _w = self.writer.lock().expect("registry writer lock");
        let mut next = BTreeMap::clone(&self.tools.load());
        let old = next.insert(plugin.tool.name.clone(), plugin);
        self.tools.store(Arc::new(next));
        old
    }

    /// Removes a plugin; returns it.
    pub fn remove(&self, name: &str) -> Option<Arc<Plugin>> {
        let _w = self.writer.lock().expect("registry writer lock");
        let mut next = BTreeMap::clone(&self.tools.load());
        let old = next.remove(name);
        if old.is_some() {
            self.tools.store(Arc::new(next));
        }
        old
    }

    /// Why the files of tool `name` were last refused, while they stay refused (a previous
    /// version, if any, keeps serving meanwhile).
    pub fn refusal(&self, name: &str) -> Option<String> {
        self.refused_map().get(name).cloned()
    }

    /// Every tool whose current files are refused, with the reason.
    pub fn refusals(&self) -> BTreeMap<String, String> {
        self.refused_map().clone()
    }

    /// Records that the files of `name` were refused, or (`None`) that they no longer are.
    pub(crate) fn set_refusal(&self, name: &str, reason: Option<String>) {
        let mut map = self.refused_map();
        match reason {
            Some(r) => map.insert(name.to_string(), r),
            None => map.remove(name),
        };
    }

    fn refused_map(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, String>> {
        self.refused.lock().unwrap_or_else(|e| e.into_inner())
    }
}
