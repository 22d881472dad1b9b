//! The WIT package the host provides and its versions, as values.

/// The WIT package plugins implement.
pub const WIT_PACKAGE: &str = "loan:reporting";

/// Versions of [`WIT_PACKAGE`] this host provides.
pub const SUPPORTED_WIT_VERSIONS: &[&str] = &[
    WitVersion::V1_0.as_str(),
    WitVersion::V1_1.as_str(),
    WitVersion::V1_2.as_str(),
];

/// A version of [`WIT_PACKAGE`] this host provides: what a loaded component targets, read
/// once from its exports and then matched as a value, not as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WitVersion {
    /// `loan:reporting@1.0.0`.
    V1_0,
    /// `loan:reporting@1.1.0`: 1.0.0 with `data.run-json` and `tool.call` returning bytes.
    V1_1,
    /// `loan:reporting@1.2.0`: 1.1.0 with the `listing` import.
    V1_2,
}

impl WitVersion {
    /// Every version this host provides, oldest first.
    pub const ALL: [WitVersion; 3] = [WitVersion::V1_0, WitVersion::V1_1, WitVersion::V1_2];

    /// The version as WIT writes it (`1.1.0`).
    pub const fn as_str(self) -> &'static str {
        match self {
            WitVersion::V1_0 => "1.0.0",
            WitVersion::V1_1 => "1.1.0",
            WitVersion::V1_2 => "1.2.0",
        }
    }

    /// The provided version written `text`, if this host provides it.
    pub fn parse(text: &str) -> Option<WitVersion> {
        WitVersion::ALL.into_iter().find(|v| v.as_str() == text)
    }
}

impl std::fmt::Display for WitVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
