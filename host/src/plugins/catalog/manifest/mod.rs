//! Plugin manifests (`<tool>.toml`): written by the operator, never by the plugin; parsed
//! strictly, with every refusal naming the file and the field.

use std::path::Path;

use crate::data::catalog::Dataset;
use crate::data::grant::Grant;
use crate::identity::RoleCode;

mod grants;
mod raw;
mod scope;

use crate::plugins::catalog::manifest::raw::in_range;
use crate::plugins::catalog::manifest::raw::parse_toml;
use crate::plugins::catalog::manifest::raw::validate_name;
use crate::plugins::catalog::manifest::raw::RawLimits;
use crate::plugins::catalog::manifest::raw::RawManifest;
use crate::plugins::catalog::manifest::raw::RawView;
pub use crate::plugins::limits::{
    DEFAULT_CORE_INSTANCES, MAX_CORE_INSTANCES, MAX_MEMORY_MIB, MAX_VIEW_BYTES,
};
pub use raw::semver_triple;
pub use scope::Scope;

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
    /// Core module instances the component may create (checked at load).
    pub core_instances: u32,
}

/// Longest view title or description, in characters.
pub const MAX_VIEW_TEXT: usize = 512;

/// The manifest's `[view]`: the plugin ships `<tool>.html`, an MCP Apps view of its results.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ViewDecl {
    /// The resource's title (default: the tool's title).
    pub title: Option<String>,
    /// What the view shows.
    pub description: Option<String>,
    /// Whether the view asks the client for a border and background (`prefersBorder`).
    pub prefers_border: Option<bool>,
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
    /// The datasets the plugin may query, each with the fields it may read and whether it
    /// may list.
    pub grants: Vec<Grant>,
    /// Caller-scoped or org-wide.
    pub scope: Scope,
    /// Limits of one call.
    pub limits: Limits,
    /// The view the plugin ships beside its component, if it declares one.
    pub view: Option<ViewDecl>,
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
        let grants = grants::grants(&raw.datasets)?;
        check_scope(raw.scope, &grants, &roles)?;
        let limits = limits(raw.limits)?;
        Ok(Manifest {
            name: raw.name,
            wit_version: raw.wit_version,
            roles,
            grants,
            scope: raw.scope,
            limits,
            view: raw.view.map(view_decl).transpose()?,
        })
    }

    /// The view's file name: `<tool>.html`, beside the manifest.
    pub fn view_file(&self) -> String {
        format!("{}.html", self.name)
    }

    /// The manifest's grant of the dataset, if it grants it.
    pub fn grant(&self, dataset: Dataset) -> Option<&Grant> {
        self.grants.iter().find(|g| g.dataset == dataset)
    }

    /// The datasets the manifest grants.
    pub fn datasets(&self) -> impl Iterator<Item = Dataset> + '_ {
        self.grants.iter().map(|g| g.dataset)
    }
}

/// Org-wide datasets only in an org-wide plugin (and it only with them), callable only by
/// the roles org-wide data is for.
fn check_scope(scope: Scope, grants: &[Grant], roles: &[RoleCode]) -> Result<(), String> {
    for d in grants.iter().map(|g| g.dataset) {
        match (scope, d.is_org_wide()) {
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
    if scope == Scope::OrgWide {
        if let Some(r) = roles.iter().find(|r| !ORG_WIDE_ROLES.contains(r)) {
            return Err(format!(
                "roles: `{r}` may not call an org-wide plugin; org-wide data is only for {}",
                ORG_WIDE_ROLES.map(|r| r.as_str()).join(", ")
            ));
        }
    }
    Ok(())
}

/// The limits a manifest asks for, each within the host's bounds, the unset ones at their
/// defaults.
fn limits(l: RawLimits) -> Result<Limits, String> {
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
    let core_instances = in_range(
        "limits.core_instances",
        l.core_instances.unwrap_or(DEFAULT_CORE_INSTANCES),
        MAX_CORE_INSTANCES,
    )?;
    Ok(Limits {
        memory_mib: l.memory_mib,
        timeout_ms: l.timeout_ms,
        max_output_bytes: l.max_output_bytes,
        max_queries,
        max_rows,
        max_data_bytes,
        db_time_ms,
        core_instances,
    })
}

/// Checks the `[view]` texts: single-line, non-empty, bounded.
fn view_decl(raw: RawView) -> Result<ViewDecl, String> {
    for (field, text) in [("title", &raw.title), ("description", &raw.description)] {
        if let Some(t) = text {
            if t.trim().is_empty() || t.chars().count() > MAX_VIEW_TEXT || t.contains(['\n', '\r'])
            {
                return Err(format!(
                    "view.{field}: must be one line of 1 to {MAX_VIEW_TEXT} characters"
                ));
            }
        }
    }
    Ok(ViewDecl {
        title: raw.title,
        description: raw.description,
        prefers_border: raw.prefers_border,
    })
}

#[cfg(test)]
mod tests;
