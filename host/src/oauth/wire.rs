//! OAuth's wire shapes shared by the facade and its callback: an error response and the
//! pairs of a query, each parameter at most once.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Json, Response};
use serde_json::json;

/// An OAuth error response (`error`, `error_description`).
pub(crate) fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    (
        status,
        Json(json!({"error": error, "error_description": description})),
    )
        .into_response()
}

/// The pairs of an OAuth query. RFC 6749 §3.1: request and response parameters must not be
/// included more than once; checking the first copy and acting on the pairs would let
/// whoever reads them next act on another one, so a repeated one is `invalid_request`.
pub(crate) fn unique_pairs(query: &str) -> Result<Vec<(String, String)>, (&'static str, String)> {
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    let mut seen = std::collections::HashSet::new();
    if let Some((name, _)) = pairs.iter().find(|(n, _)| !seen.insert(n.as_str())) {
        return Err((
            "invalid_request",
            format!("parameter {name:?} is repeated; each may appear once"),
        ));
    }
    Ok(pairs)
}
