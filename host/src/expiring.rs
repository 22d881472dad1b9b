//! A bounded map whose entries expire: the token-validation cache and the penalty box keep
//! recent answers per token in one. Imports nothing of ours.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Entries that expire, at most `max` of them: past that, expired entries go, then all.
#[derive(Debug)]
pub struct ExpiringMap<K, V> {
    entries: Mutex<HashMap<K, (V, Instant)>>,
    max: usize,
}

impl<K: Eq + Hash, V: Clone> ExpiringMap<K, V> {
    /// An empty map holding at most `max` entries.
    pub fn new(max: usize) -> Self {
        ExpiringMap {
            entries: Mutex::new(HashMap::new()),
            max,
        }
    }

    /// The live value of `key` and when it expires.
    pub fn get(&self, key: &K) -> Option<(V, Instant)> {
        let now = Instant::now();
        self.entries
            .lock()
            .expect("expiring map lock")
            .get(key)
            .filter(|(_, until)| *until > now)
            .cloned()
    }

    /// Forgets `key`.
    pub fn remove(&self, key: &K) {
        self.entries.lock().expect("expiring map lock").remove(key);
    }

    /// Keeps `value` for `key` for `ttl`.
    pub fn insert(&self, key: K, value: V, ttl: Duration) {
        let mut entries = self.entries.lock().expect("expiring map lock");
        if entries.len() >= self.max {
            let now = Instant::now();
            entries.retain(|_, (_, until)| *until > now);
            if entries.len() >= self.max {
                entries.clear();
            }
        }
        entries.insert(key, (value, Instant::now() + ttl));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire_and_the_map_stays_bounded() {
        let m = ExpiringMap::new(2);
        m.insert(1, "a", Duration::from_secs(60));
        m.insert(2, "b", Duration::ZERO);
        assert_eq!(m.get(&1).map(|(v, _)| v), Some("a"));
        assert_eq!(m.get(&2), None, "expired");
        m.insert(3, "c", Duration::from_secs(60));
        assert_eq!(
            m.get(&1).map(|(v, _)| v),
            Some("a"),
            "only the expired entry went"
        );
        m.insert(4, "d", Duration::from_secs(60));
        assert_eq!(m.get(&4).map(|(v, _)| v), Some("d"));
        assert_eq!(m.get(&1), None, "full of live entries: cleared");
    }
}
