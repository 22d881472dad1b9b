//! The error models (RFC 9457 problem details), open to extra properties.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `ProblemDetails`: an error answer (`application/problem+json`). Extra properties allowed
/// and kept.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProblemDetails {
    /// A URI reference naming the problem type.
    pub r#type: Option<String>,
    /// A short summary of the problem type.
    pub title: Option<String>,
    /// The HTTP status code.
    pub status: Option<i32>,
    /// What went wrong this time.
    pub detail: Option<String>,
    /// A URI reference naming this occurrence.
    pub instance: Option<String>,
    /// Any other property, kept as received.
    #[serde(flatten)]
    pub extensions: BTreeMap<String, Value>,
}

/// `ValidationProblemDetails`: a [`ProblemDetails`] for a request that failed validation,
/// with the errors per field. Extra properties allowed and kept.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ValidationProblemDetails {
    /// A URI reference naming the problem type.
    pub r#type: Option<String>,
    /// A short summary of the problem type.
    pub title: Option<String>,
    /// The HTTP status code.
    pub status: Option<i32>,
    /// What went wrong this time.
    pub detail: Option<String>,
    /// A URI reference naming this occurrence.
    pub instance: Option<String>,
    /// The messages per field (the key names the field or `$` for the whole body).
    pub errors: Option<BTreeMap<String, Vec<String>>>,
    /// Any other property, kept as received.
    #[serde(flatten)]
    pub extensions: BTreeMap<String, Value>,
}
