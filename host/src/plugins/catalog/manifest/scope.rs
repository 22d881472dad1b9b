//! Whether a plugin's queries are limited to the caller's loans.

use serde::Deserialize;

/// Whether a plugin's queries are limited to the caller's loans.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// Caller-scoped: the host ANDs the caller's scope into every query.
    Caller,
    /// Org-wide: allowed only for warehouse datasets.
    OrgWide,
}
