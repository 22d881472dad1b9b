//! Reading one setting: TOML files, URLs, booleans, lists and dates, each refused with the
//! variable named.

use std::collections::BTreeMap;
use std::path::Path;

use time::Date;

use super::settings::ConfigError;
use crate::config::settings::err;

pub(super) fn read_toml(path: &Path) -> Result<BTreeMap<String, String>, ConfigError> {
    let file = path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|e| err(&file, format!("cannot read: {e}")))?;
    let table: toml::Table =
        toml::from_str(&text).map_err(|e| err(&file, e.message().to_string()))?;
    let mut map = BTreeMap::new();
    for (k, v) in table {
        let value = match v {
            toml::Value::String(s) => s,
            toml::Value::Boolean(b) => b.to_string(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Array(items) => items
                .iter()
                .map(|i| i.as_str().map(str::to_string).ok_or(()))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| err(&file, format!("{k}: a list must hold strings")))?
                .join(","),
            other => return Err(err(&file, format!("{k}: unsupported value {other}"))),
        };
        map.insert(format!("LOANHOST_{}", k.to_ascii_uppercase()), value);
    }
    Ok(map)
}

pub(super) fn http_url(var: &str, v: &str) -> Result<String, ConfigError> {
    let v = v.trim_end_matches('/');
    let rest = v
        .strip_prefix("http://")
        .or_else(|| v.strip_prefix("https://"))
        .ok_or_else(|| err(var, format!("`{v}` is not an http:// or https:// URL")))?;
    if rest.is_empty() || rest.starts_with('/') {
        return Err(err(var, format!("`{v}` has no host")));
    }
    Ok(v.to_string())
}

/// A client redirect URI as OAuth takes it: absolute http(s), with a host, no fragment.
pub(super) fn redirect_uri(var: &str, v: &str) -> Result<(), ConfigError> {
    match url::Url::parse(v) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {
            if u.fragment().is_some() {
                Err(err(
                    var,
                    format!("`{v}` has a fragment; redirect URIs may not"),
                ))
            } else {
                Ok(())
            }
        }
        _ => Err(err(var, format!("`{v}` is not an absolute http(s) URL"))),
    }
}

pub(super) fn non_empty(var: &str, v: String) -> Result<String, ConfigError> {
    if v.trim().is_empty() {
        Err(err(var, "must not be empty"))
    } else {
        Ok(v)
    }
}

pub(super) fn boolean(var: &str, v: &str) -> Result<bool, ConfigError> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" | "" => Ok(false),
        _ => Err(err(var, format!("`{v}` is not true or false"))),
    }
}

pub(super) fn list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Parses `YYYY-MM-DD`.
pub fn parse_date(s: &str) -> Option<Date> {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    (s.len() == 10)
        .then(|| Date::parse(s, &format).ok())
        .flatten()
}
