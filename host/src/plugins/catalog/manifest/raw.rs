//! The manifest as written (TOML, every key checked) and the small parsers its validation uses:
//! ranges, names, versions.

use serde::Deserialize;

use super::scope::Scope;
use crate::references::is_tool_name;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawManifest {
    pub(super) name: String,
    pub(super) wit_version: String,
    pub(super) roles: Vec<String>,
    pub(super) datasets: toml::Value,
    pub(super) scope: Scope,
    pub(super) limits: RawLimits,
    #[serde(default)]
    pub(super) view: Option<RawView>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawView {
    #[serde(default)]
    pub(super) title: Option<String>,
    #[serde(default)]
    pub(super) description: Option<String>,
    #[serde(default)]
    pub(super) prefers_border: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLimits {
    pub(super) memory_mib: u32,
    pub(super) timeout_ms: u64,
    pub(super) max_output_bytes: u64,
    #[serde(default)]
    pub(super) max_queries: Option<u32>,
    #[serde(default)]
    pub(super) max_rows: Option<u64>,
    #[serde(default)]
    pub(super) max_data_bytes: Option<u64>,
    #[serde(default)]
    pub(super) db_time_ms: Option<u64>,
    #[serde(default)]
    pub(super) core_instances: Option<u32>,
}

/// Checks `1..=max` for an optional limit, naming the field.
pub(super) fn in_range<T: PartialOrd + From<u8> + std::fmt::Display>(
    field: &str,
    v: T,
    max: T,
) -> Result<T, String> {
    if v >= T::from(1) && v <= max {
        Ok(v)
    } else {
        Err(format!("{field}: {v} is outside 1..={max}"))
    }
}

/// Deserializes TOML, naming the offending key path (`limits.memory_mib: invalid type …`)
/// or the line of a syntax error.
pub(super) fn parse_toml<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    let line_of = |e: &toml::de::Error| {
        e.span()
            .map(|s| {
                format!(
                    "line {}: ",
                    text[..s.start.min(text.len())].matches('\n').count() + 1
                )
            })
            .unwrap_or_default()
    };
    let de =
        toml::Deserializer::parse(text).map_err(|e| format!("{}{}", line_of(&e), e.message()))?;
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." || path.is_empty() {
            format!("{}{}", line_of(&inner), inner.message())
        } else {
            format!("{path}: {}", inner.message())
        }
    })
}

/// A tool name: lower-case letters, digits and `_`, starting with a letter, at most 64.
pub(super) fn validate_name(name: &str) -> Result<(), String> {
    if is_tool_name(name) && name.len() <= 64 {
        Ok(())
    } else {
        Err(format!(
            "name: `{name}` must be 1-64 characters of a-z, 0-9 and _, starting with a letter"
        ))
    }
}

/// Parses `MAJOR.MINOR.PATCH`.
pub fn semver_triple(v: &str) -> Option<(u64, u64, u64)> {
    let mut it = v.split('.').map(|p| {
        if p.is_empty() || (p.len() > 1 && p.starts_with('0')) {
            None
        } else {
            p.parse::<u64>().ok()
        }
    });
    let t = (it.next()??, it.next()??, it.next()??);
    it.next().is_none().then_some(t)
}
