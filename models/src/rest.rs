//! Bodies of the REST API's own endpoints (not among the spec's shared models, which name
//! no type for them).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The body of `POST {api_prefix}/oauth/token`: both fields optional and nullable; the body
/// is not closed, so other properties are accepted and ignored, and an empty body is the same
/// as `{}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OAuthTokenRequest {
    /// The client's id.
    #[serde(default)]
    pub client_id: Option<String>,
    /// The client's secret.
    #[serde(default)]
    pub client_secret: Option<String>,
}
