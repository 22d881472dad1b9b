//! The settings as given: `LOANHOST_*` pairs over the reference table's defaults, read one
//! variable at a time, each reader's error naming the variable.

use std::collections::BTreeMap;

use super::reference::SETTINGS;
use super::settings::{err, ConfigError};
use super::values::{boolean, list};

/// The pairs given, each unknown key refused, each missing one read as its default.
pub(super) struct Source<'a> {
    map: &'a BTreeMap<String, String>,
}

impl<'a> Source<'a> {
    /// The pairs of `map`, or the first key that is no `LOANHOST_*` setting.
    pub(super) fn new(map: &'a BTreeMap<String, String>) -> Result<Self, ConfigError> {
        for key in map.keys() {
            if !SETTINGS.iter().any(|s| s.name == key) {
                return Err(err(key, "unknown configuration variable"));
            }
        }
        Ok(Source { map })
    }

    /// The value given, or the setting's default, or `None` for one without a default.
    pub(super) fn get(&self, key: &str) -> Option<String> {
        self.map.get(key).cloned().or_else(|| {
            SETTINGS
                .iter()
                .find(|s| s.name == key)
                .and_then(|s| s.default.map(str::to_string))
        })
    }

    /// The value of a setting that has a default.
    pub(super) fn required(&self, key: &str) -> String {
        self.get(key).expect("has a default")
    }

    /// A whole number in `1..=max`.
    pub(super) fn number(&self, key: &str, max: u64) -> Result<u64, ConfigError> {
        let v = self.required(key);
        match v.trim().parse::<u64>() {
            Ok(n) if (1..=max).contains(&n) => Ok(n),
            _ => Err(err(
                key,
                format!("`{v}` is not a whole number in 1..={max}"),
            )),
        }
    }

    /// A number of seconds in `1..=max`.
    pub(super) fn seconds(&self, key: &str, max: u64) -> Result<std::time::Duration, ConfigError> {
        Ok(std::time::Duration::from_secs(self.number(key, max)?))
    }

    /// `true`/`false` (also `1`/`0`, `yes`/`no`; empty is false).
    pub(super) fn boolean(&self, key: &str) -> Result<bool, ConfigError> {
        boolean(key, &self.required(key))
    }

    /// A comma-separated list, blanks dropped.
    pub(super) fn list(&self, key: &str) -> Vec<String> {
        list(&self.required(key))
    }
}
