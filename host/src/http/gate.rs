//! Per-key concurrency gates: how many requests one client address may have in flight on the
//! unauthenticated endpoints, and how many bodies one bearer token may be sending to `/mcp` at
//! once. Entries live only while a request holds them, so the map is as large as the requests
//! in flight.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

/// At most `max` holders per key at once.
#[derive(Debug)]
pub struct KeyedGate<K: Eq + Hash + Clone> {
    held: Mutex<HashMap<K, u32>>,
    max: u32,
}

impl<K: Eq + Hash + Clone> KeyedGate<K> {
    /// A gate letting `max` holders of each key through.
    pub fn new(max: u32) -> Arc<Self> {
        Arc::new(KeyedGate {
            held: Mutex::new(HashMap::new()),
            max,
        })
    }

    /// The most holders of one key.
    pub fn max(&self) -> u32 {
        self.max
    }

    /// A place for `key`, or `None` when it holds all of its places already.
    pub fn try_enter(self: &Arc<Self>, key: K) -> Option<GateGuard<K>> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let n = held.entry(key.clone()).or_insert(0);
        if *n >= self.max {
            return None;
        }
        *n += 1;
        Some(GateGuard {
            gate: self.clone(),
            key: Some(key),
        })
    }

    /// Keys holding a place now.
    pub fn keys_held(&self) -> usize {
        self.held.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

/// A place in a [`KeyedGate`], given back when dropped.
#[derive(Debug)]
pub struct GateGuard<K: Eq + Hash + Clone> {
    gate: Arc<KeyedGate<K>>,
    key: Option<K>,
}

impl<K: Eq + Hash + Clone> Drop for GateGuard<K> {
    fn drop(&mut self) {
        let Some(key) = self.key.take() else { return };
        let mut held = self.gate.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = held.get_mut(&key) {
            *n -= 1;
            if *n == 0 {
                held.remove(&key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_gets_its_places_and_gives_them_back() {
        let gate = KeyedGate::new(2);
        let a1 = gate.try_enter("a").unwrap();
        let _a2 = gate.try_enter("a").unwrap();
        assert!(gate.try_enter("a").is_none(), "a third place for a");
        let _b = gate.try_enter("b").expect("another key is not affected");
        drop(a1);
        assert!(gate.try_enter("a").is_some(), "a place given back");
        drop(_b);
        assert_eq!(gate.keys_held(), 1, "keys without holders are forgotten");
    }
}
