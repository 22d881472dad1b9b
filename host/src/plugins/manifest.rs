//! Plugin manifests (`<tool>.toml`): written by the operator, never by the plugin; parsed
//! strictly, with every refusal naming the file and the field.

use std::path::Path;

use serde::Deserialize;

use crate::data::catalog::Dataset;
use crate::identity::RoleCode;

/// Largest memory a manifest may grant to one instance (also the pooling slot size).
pub const MAX_MEMORY_MIB: u32 = 512;
/// Longest wall-clock deadline a manifest may set.
pub const MAX_TIMEOUT_MS: u64 = 60_000;
/// Largest result a manifest may allow (a tool result is read by a model: 4 MiB is far more
/// than any context window takes).
pub const MAX_OUTPUT_BYTES: u64 = 4 * 1024 * 1024;
/// Default and largest number of `data` queries in one call.
pub const DEFAULT_MAX_QUERIES: u32 = 16;
/// Largest `max_queries` a manifest may set.
pub const MAX_MAX_QUERIES: u32 = 256;
/// Default rows all the queries of one call may deliver to the guest.
pub const DEFAULT_MAX_ROWS: u64 = 50_000;
/// Largest `max_rows` a manifest may set.
pub const MAX_MAX_ROWS: u64 = 1_000_000;
/// Default bytes of decoded query results one call may receive.
pub const DEFAULT_MAX_DATA_BYTES: u64 = 8 * 1024 * 1024;
/// Largest `max_data_bytes` a manifest may set.
pub const MAX_MAX_DATA_BYTES: u64 = 64 * 1024 * 1024;
/// Default database time of one call, in milliseconds (summed over its queries).
pub const DEFAULT_DB_TIME_MS: u64 = 10_000;
/// Largest `db_time_ms` a manifest may set.
pub const MAX_DB_TIME_MS: u64 = 60_000;
/// Roles an org-wide plugin may be granted to: org-wide data is for the roles that already
/// see beyond their own loans.
pub const ORG_WIDE_ROLES: [RoleCode; 3] =
    [RoleCode::Admin, RoleCode::Processor, RoleCode::ConciergeKey];

/// Whether a plugin's queries are limited to the caller's loans.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// Caller-scoped: the host ANDs the caller's scope into every query.
    Caller,
    /// Org-wide: allowed only for warehouse datasets.
    OrgWide,
}

/// Resource limits of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Linear memory per instance, in MiB.
    pub memory_mib: u32,
    /// Wall-clock deadline of one call, in milliseconds.
    pub timeout_ms: u64,
    /// Largest result (serialized JSON), in bytes.
    pub max_output_bytes: u64,
    /// `data` queries one call may run.
    pub max_queries: u32,
    /// Rows all queries of one call may deliver to the guest.
    pub max_rows: u64,
    /// Bytes of decoded query results one call may receive.
    pub max_data_bytes: u64,
    /// Database time of one call (all its queries), in milliseconds; a statement still
    /// running when it is spent is stopped inside the engine.
    pub db_time_ms: u64,
}

/// A validated manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The MCP tool name; equals the file stem and the plugin's own description.
    pub name: String,
    /// The WIT package version the plugin was built against, e.g. `1.0.0`.
    pub wit_version: String,
    /// Roles allowed to call the tool (any one suffices).
    pub roles: Vec<RoleCode>,
    /// Datasets the plugin may query.
    pub datasets: Vec<Dataset>,
    /// Caller-scoped or org-wide.
    pub scope: Scope,
    /// Limits of one call.
    pub limits: Limits,
}

/// A manifest that was refused: the file and the precise reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {reason}")]
pub struct ManifestError {
    /// The manifest's path as given.
    pub file: String,
    /// What is wrong, naming the field.
    pub reason: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    name: String,
    wit_version: String,
    roles: Vec<String>,
    datasets: Vec<String>,
    scope: Scope,
    limits: RawLimits,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    memory_mib: u32,
    timeout_ms: u64,
    max_output_bytes: u64,
    #[serde(default)]
    max_queries: Option<u32>,
    #[serde(default)]
    max_rows: Option<u64>,
    #[serde(default)]
    max_data_bytes: Option<u64>,
    #[serde(default)]
    db_time_ms: Option<u64>,
}

impl Manifest {
    /// Reads and validates a manifest file.
    pub fn load(path: &Path) -> Result<Manifest, ManifestError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ManifestError {
            file: file.clone(),
            reason: format!("cannot read: {e}"),
        })?;
        let expected = path.file_stem().and_then(|s| s.to_str());
        Self::parse(&text, expected).map_err(|reason| ManifestError { file, reason })
    }

    /// Parses manifest text; `expected_name` is the file stem the name must equal.
    pub fn parse(text: &str, expected_name: Option<&str>) -> Result<Manifest, String> {
        let raw: RawManifest = parse_toml(text)?;
        validate_name(&raw.name)?;
        if let Some(stem) = expected_name {
            if stem != raw.name {
                return Err(format!(
                    "name: `{}` does not match the file name `{stem}.toml`",
                    raw.name
                ));
            }
        }
        if semver_triple(&raw.wit_version).is_none() {
            return Err(format!(
                "wit_version: `{}` is not a version like `1.0.0`",
                raw.wit_version
            ));
        }
        if raw.roles.is_empty() {
            return Err("roles: must name at least one role".into());
        }
        let roles = raw
            .roles
            .iter()
            .enumerate()
            .map(|(i, r)| {
                RoleCode::parse(r).ok_or_else(|| {
                    format!(
                        "roles[{i}]: unknown role code `{r}`; known: {}",
                        RoleCode::ALL.map(|r| r.as_str()).join(", ")
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let datasets = raw
            .datasets
            .iter()
            .enumerate()
            .map(|(i, d)| {
                Dataset::parse(d).ok_or_else(|| {
                    format!(
                        "datasets[{i}]: unknown dataset `{d}`; known: {}",
                        Dataset::ALL.map(|d| d.as_str()).join(", ")
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        for d in &datasets {
            match (raw.scope, d.is_org_wide()) {
                (Scope::Caller, true) => {
                    return Err(format!(
                        "datasets: `{}` is an org-wide warehouse dataset; it needs scope = \"org-wide\"",
                        d.as_str()
                    ))
                }
                (Scope::OrgWide, false) => {
                    return Err(format!(
                        "scope: \"org-wide\" is allowed only for warehouse datasets, but `{}` is caller-scoped",
                        d.as_str()
                    ))
                }
                _ => {}
            }
        }
        if raw.scope == Scope::OrgWide {
            if let Some(r) = roles.iter().find(|r| !ORG_WIDE_ROLES.contains(r)) {
                return Err(format!(
                    "roles: `{r}` may not call an org-wide plugin; org-wide data is only for {}",
                    ORG_WIDE_ROLES.map(|r| r.as_str()).join(", ")
                ));
            }
        }
        let l = raw.limits;
        if !(1..=MAX_MEMORY_MIB).contains(&l.memory_mib) {
            return Err(format!(
                "limits.memory_mib: {} is outside 1..={MAX_MEMORY_MIB}",
                l.memory_mib
            ));
        }
        if !(1..=MAX_TIMEOUT_MS).contains(&l.timeout_ms) {
            return Err(format!(
                "limits.timeout_ms: {} is outside 1..={MAX_TIMEOUT_MS}",
                l.timeout_ms
            ));
        }
        if !(1..=MAX_OUTPUT_BYTES).contains(&l.max_output_bytes) {
            return Err(format!(
                "limits.max_output_bytes: {} is outside 1..={MAX_OUTPUT_BYTES}",
                l.max_output_bytes
            ));
        }
        let max_queries = in_range(
            "limits.max_queries",
            l.max_queries.unwrap_or(DEFAULT_MAX_QUERIES),
            MAX_MAX_QUERIES,
        )?;
        let max_rows = in_range(
            "limits.max_rows",
            l.max_rows.unwrap_or(DEFAULT_MAX_ROWS),
            MAX_MAX_ROWS,
        )?;
        let max_data_bytes = in_range(
            "limits.max_data_bytes",
            l.max_data_bytes.unwrap_or(DEFAULT_MAX_DATA_BYTES),
            MAX_MAX_DATA_BYTES,
        )?;
        let db_time_ms = in_range(
            "limits.db_time_ms",
            l.db_time_ms.unwrap_or(DEFAULT_DB_TIME_MS),
            MAX_DB_TIME_MS,
        )?;
        Ok(Manifest {
            name: raw.name,
            wit_version: raw.wit_version,
            roles,
            datasets,
            scope: raw.scope,
            limits: Limits {
                memory_mib: l.memory_mib,
                timeout_ms: l.timeout_ms,
                max_output_bytes: l.max_output_bytes,
                max_queries,
                max_rows,
                max_data_bytes,
                db_time_ms,
            },
        })
    }

    /// Whether the manifest grants the dataset.
    pub fn grants(&self, dataset: Dataset) -> bool {
        self.datasets.contains(&dataset)
    }
}

/// Checks `1..=max` for an optional limit, naming the field.
fn in_range<T: PartialOrd + From<u8> + std::fmt::Display>(
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
fn parse_toml<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
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
fn validate_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok {
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

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name = "report_loans"
wit_version = "1.0.0"
roles = ["Admin", "Agent"]
datasets = ["loans"]
scope = "caller"
[limits]
memory_mib = 32
timeout_ms = 2000
max_output_bytes = 100000
"#;

    fn err(text: &str) -> String {
        Manifest::parse(text, Some("report_loans")).unwrap_err()
    }

    #[test]
    fn good_manifest_parses() {
        let m = Manifest::parse(GOOD, Some("report_loans")).unwrap();
        assert_eq!(m.roles, vec![RoleCode::Admin, RoleCode::Agent]);
        assert_eq!(m.limits.timeout_ms, 2000);
        assert!(m.grants(Dataset::Loans));
    }

    #[test]
    fn syntax_error_names_the_line() {
        let e = err(&GOOD.replace("scope = \"caller\"", "scope = caller"));
        assert!(e.starts_with("line 6: "), "{e}");
    }

    #[test]
    fn missing_field_is_named() {
        let e = err(&GOOD.replace("roles = [\"Admin\", \"Agent\"]\n", ""));
        assert!(e.contains("missing field `roles`"), "{e}");
    }

    #[test]
    fn unknown_field_is_named() {
        let e = err(&GOOD.replace("scope = ", "colour = 1\nscope = "));
        assert!(e.contains("unknown field `colour`"), "{e}");
    }

    #[test]
    fn wrong_type_is_named() {
        let e = err(&GOOD.replace("memory_mib = 32", "memory_mib = \"lots\""));
        assert_eq!(
            e,
            "limits.memory_mib: invalid type: string \"lots\", expected u32"
        );
    }

    #[test]
    fn unknown_role_is_named_with_index() {
        let e = err(&GOOD.replace("\"Agent\"]", "\"Agnet\"]"));
        assert!(e.starts_with("roles[1]: unknown role code `Agnet`"), "{e}");
    }

    #[test]
    fn name_must_match_file() {
        let e = Manifest::parse(GOOD, Some("other")).unwrap_err();
        assert_eq!(
            e,
            "name: `report_loans` does not match the file name `other.toml`"
        );
    }

    #[test]
    fn org_wide_only_for_warehouse() {
        let e = err(&GOOD.replace("scope = \"caller\"", "scope = \"org-wide\""));
        assert!(e.starts_with("scope: \"org-wide\" is allowed only"), "{e}");
        let e = err(&GOOD.replace("[\"loans\"]", "[\"dw-deals\"]"));
        assert!(e.starts_with("datasets: `dw-deals` is an org-wide"), "{e}");
    }

    #[test]
    fn limits_are_bounded() {
        let e = err(&GOOD.replace("timeout_ms = 2000", "timeout_ms = 0"));
        assert_eq!(e, "limits.timeout_ms: 0 is outside 1..=60000");
        let e = err(&GOOD.replace("memory_mib = 32", "memory_mib = 4096"));
        assert_eq!(e, "limits.memory_mib: 4096 is outside 1..=512");
    }

    #[test]
    fn bad_wit_version() {
        let e = err(&GOOD.replace("\"1.0.0\"", "\"1.0\""));
        assert_eq!(e, "wit_version: `1.0` is not a version like `1.0.0`");
    }

    #[test]
    fn semver() {
        assert_eq!(semver_triple("1.2.3"), Some((1, 2, 3)));
        assert_eq!(semver_triple("01.2.3"), None);
        assert_eq!(semver_triple("1.2"), None);
        assert_eq!(semver_triple("1.2.3.4"), None);
    }

    mod fuzz {
        use super::*;
        use proptest::prelude::*;

        /// A line a manifest might hold, valid or not.
        fn line() -> impl Strategy<Value = String> {
            let key = prop_oneof![
                Just("name"),
                Just("wit_version"),
                Just("roles"),
                Just("datasets"),
                Just("scope"),
                Just("memory_mib"),
                Just("timeout_ms"),
                Just("max_output_bytes"),
                Just("max_queries"),
                Just("max_rows"),
                Just("max_data_bytes"),
                Just("db_time_ms"),
                Just("[limits]"),
                Just("colour"),
            ];
            let value = prop_oneof![
                any::<i64>().prop_map(|i| i.to_string()),
                Just("\"report_loans\"".to_string()),
                Just("\"1.0.0\"".to_string()),
                Just("[\"Admin\", \"Agent\"]".to_string()),
                Just("[\"loans\", \"dw-deals\"]".to_string()),
                Just("\"org-wide\"".to_string()),
                Just("\"caller\"".to_string()),
                ".{0,10}",
            ];
            (key, value).prop_map(|(k, v)| {
                if k.starts_with('[') {
                    k.to_string()
                } else {
                    format!("{k} = {v}")
                }
            })
        }

        proptest! {
            #[test]
            fn fuzz_arbitrary_text_never_panics(text in ".{0,400}") {
                let _ = Manifest::parse(&text, Some("report_loans"));
            }

            #[test]
            fn fuzz_a_manifest_that_parses_keeps_every_rule(
                lines in prop::collection::vec(line(), 0..14),
                at in 0usize..12,
            ) {
                // A good manifest with lines inserted at a random place.
                let mut all: Vec<String> = GOOD.lines().map(str::to_string).collect();
                let at = at.min(all.len());
                for l in lines.into_iter().rev() {
                    all.insert(at, l);
                }
                match Manifest::parse(&all.join("\n"), Some("report_loans")) {
                    Ok(m) => {
                        prop_assert_eq!(m.name.as_str(), "report_loans");
                        prop_assert!(!m.roles.is_empty());
                        let l = m.limits;
                        prop_assert!((1..=MAX_MEMORY_MIB).contains(&l.memory_mib));
                        prop_assert!((1..=MAX_TIMEOUT_MS).contains(&l.timeout_ms));
                        prop_assert!((1..=MAX_OUTPUT_BYTES).contains(&l.max_output_bytes));
                        prop_assert!((1..=MAX_MAX_QUERIES).contains(&l.max_queries));
                        prop_assert!((1..=MAX_MAX_ROWS).contains(&l.max_rows));
                        prop_assert!((1..=MAX_MAX_DATA_BYTES).contains(&l.max_data_bytes));
                        prop_assert!((1..=MAX_DB_TIME_MS).contains(&l.db_time_ms));
                        if m.scope == Scope::OrgWide {
                            prop_assert!(m.roles.iter().all(|r| ORG_WIDE_ROLES.contains(r)));
                            prop_assert!(m.datasets.iter().all(|d| d.is_org_wide()));
                        } else {
                            prop_assert!(m.datasets.iter().all(|d| !d.is_org_wide()));
                        }
                    }
                    Err(e) => prop_assert!(!e.is_empty()),
                }
            }
        }
    }
}
