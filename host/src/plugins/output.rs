//! A tool's result as the plugin wrote it (checked to be one JSON object, copied into the
//! answer without being parsed into a tree), and how a guest's typed error reads.

use serde_json::value::RawValue;
use serde_json::Value;

use super::sandbox::bindings::types::ToolError;

/// A tool's result: the JSON object the plugin wrote, as it wrote it (checked to be exactly
/// one JSON object, never parsed into a tree). Numbers keep every digit the plugin wrote.
#[derive(Debug)]
pub struct ToolOutput(Box<RawValue>);

impl ToolOutput {
    /// `text` when it is one JSON object (whitespace around it is dropped), else `None`.
    pub fn new(text: String) -> Option<Self> {
        let raw = RawValue::from_string(text).ok()?;
        raw.get().starts_with('{').then_some(ToolOutput(raw))
    }

    /// The object's JSON text.
    pub fn text(&self) -> &str {
        self.0.get()
    }

    /// The object, for writing into a larger JSON document as it is.
    pub fn into_raw(self) -> Box<RawValue> {
        self.0
    }

    /// The object parsed, for callers that read its members (fails only on a number too
    /// large for an `f64`, which the text itself carries exactly).
    pub fn to_value(&self) -> serde_json::Result<Value> {
        serde_json::from_str(self.0.get())
    }
}

pub(super) fn from_guest(e: ToolError) -> ToolCallError {
    match e {
        ToolError::InvalidParams(m) => ToolCallError::InvalidParams(m),
        ToolError::BadRequest(m) => ToolCallError::BadRequest(m),
        ToolError::Forbidden(m) => ToolCallError::Forbidden(m),
        ToolError::Internal(m) => ToolCallError::Internal(m),
    }
}

pub(super) fn join<'a>(items: impl Iterator<Item = &'a str>) -> String {
    items.collect::<Vec<_>>().join(", ")
}

/// A tool call that produced no result: the MCP layer turns each into an `isError` result
/// whose text starts with [`ToolCallError::code`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolCallError {
    /// Wrong arguments.
    #[error("invalid_params: {0}")]
    InvalidParams(String),
    /// Contradictory arguments.
    #[error("bad_request: {0}")]
    BadRequest(String),
    /// The caller lacks a role.
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// The plugin ran past its deadline.
    #[error("timeout: {0}")]
    Timeout(String),
    /// Anything else; never carries internals.
    #[error("internal: {0}")]
    Internal(String),
}

impl ToolCallError {
    /// The error code, e.g. `invalid_params`.
    pub fn code(&self) -> &'static str {
        match self {
            ToolCallError::InvalidParams(_) => "invalid_params",
            ToolCallError::BadRequest(_) => "bad_request",
            ToolCallError::Forbidden(_) => "forbidden",
            ToolCallError::Timeout(_) => "timeout",
            ToolCallError::Internal(_) => "internal",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ToolOutput;

    #[test]
    fn a_tool_output_is_one_json_object_kept_as_written() {
        // Arrange: digits an f64 would lose, whitespace around the object.
        let text = "  {\"total\": 12345678901234567890.10, \"rows\": [1.50]}\n";
        // Act
        let output = ToolOutput::new(text.to_string()).unwrap();
        // Assert
        assert_eq!(
            output.text(),
            "{\"total\": 12345678901234567890.10, \"rows\": [1.50]}"
        );
        assert_eq!(output.to_value().unwrap()["rows"][0], 1.5);
        for bad in [
            "[1, 2]",
            "\"text\"",
            "3",
            "null",
            "",
            "{\"a\": 1",
            "{\"a\": 1} {}",
            "{\"a\": \"line\nbreak\"}",
            "{\"a\": 1,}",
        ] {
            assert!(ToolOutput::new(bad.to_string()).is_none(), "{bad:?}");
        }
    }
}
