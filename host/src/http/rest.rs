//! The REST API (description `v1.2`): `POST {api_prefix}/oauth/token` and the API description
//! itself at `GET {api_prefix}/openapi.json`. Every error is a `ProblemDetails` (or, for a body
//! that fails validation, a `ValidationProblemDetails`) as `application/problem+json`.

use std::collections::BTreeMap;

use axum::extract::{OriginalUri, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use loanhost_models::rest::OAuthTokenRequest;
use loanhost_models::{ProblemDetails, ValidationProblemDetails};

use super::state::AppState;
use crate::auth::AuthError;
use crate::request_body::media_type;

/// Largest body of `POST {api_prefix}/oauth/token` (two optional strings).
pub const MAX_REST_BODY: usize = 64 * 1024;

/// `POST {api_prefix}/oauth/token`: bearer token only; body `{client_id?, client_secret?}`
/// (nullable strings, other properties ignored, empty body allowed) as JSON, the OData
/// flavour (`application/json;odata.metadata=minimal`) included; `200` with no content.
pub async fn token(
    State(state): State<AppState>,
    OriginalUri(uri): OriginalUri,
    request: Request,
) -> Response {
    let instance = uri.path().to_string();
    // The token is checked from the headers before the body is read.
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    if let Err(refused) = authenticated(&state, &headers, &instance).await {
        return refused;
    }
    if let Some(ct) = headers.get(header::CONTENT_TYPE) {
        let essence = media_type(ct);
        if !is_json(&essence) {
            return problem(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                &format!("The body must be JSON (application/json); got {essence}."),
                &instance,
            );
        }
    }
    let body = match state.read_body(&headers, body, MAX_REST_BODY).await {
        Ok(b) => b,
        Err(e @ crate::request_body::BodyError::TooLarge(_)) => {
            return problem(
                e.status(),
                &format!("The request body is larger than {MAX_REST_BODY} bytes."),
                &instance,
            )
        }
        Err(e) => return problem(e.status(), &format!("{e}."), &instance),
    };
    let Some(_slot) = state.work_slot() else {
        return super::reply::busy();
    };
    if body.iter().all(u8::is_ascii_whitespace) {
        return StatusCode::OK.into_response();
    }
    match read_body(&body) {
        Ok(_) => StatusCode::OK.into_response(),
        Err(errors) => validation_problem(errors, &instance),
    }
}

/// Reads the token request, or says what is wrong per field (`$` for the whole body).
fn read_body(body: &[u8]) -> Result<OAuthTokenRequest, BTreeMap<String, Vec<String>>> {
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|e| {
        BTreeMap::from([(
            "$".to_string(),
            vec![format!("The request body is not valid JSON: {e}")],
        )])
    })?;
    if !value.is_object() {
        return Err(BTreeMap::from([(
            "$".to_string(),
            vec!["The request body must be a JSON object.".to_string()],
        )]));
    }
    let mut errors = BTreeMap::new();
    for k in ["client_id", "client_secret"] {
        if value
            .get(k)
            .is_some_and(|v| !(v.is_string() || v.is_null()))
        {
            errors.insert(
                k.to_string(),
                vec![format!("The {k} field must be a string or null.")],
            );
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    serde_json::from_value(value)
        .map_err(|e| BTreeMap::from([("$".to_string(), vec![e.to_string()])]))
}

/// The media type without parameters, lower-cased.
/// JSON, including `+json` types; OData's parameters (`odata.metadata=…`) ride on
/// `application/json` and are ignored with the other parameters.
/// The caller of a REST request: the bearer token validated and the agent resolved as for
/// `/mcp`, or the `ProblemDetails` answer (`401` with the challenges, `503` when the directory is
/// unavailable).
pub(super) async fn authenticated(
    state: &AppState,
    headers: &axum::http::HeaderMap,
    instance: &str,
) -> Result<crate::identity::Identity, Response> {
    match state.authenticator.authenticate(headers, None).await {
        Ok(identity) => Ok(identity),
        Err(AuthError::Unavailable(reason)) => {
            tracing::error!(reason = ?reason, "the agent directory is unavailable");
            Err(unavailable(instance))
        }
        Err(e) => {
            // Debug-formatted: the reason may quote token text, escaped here.
            tracing::info!(reason = ?e.to_string(), "unauthenticated REST request");
            let mut resp = problem(
                StatusCode::UNAUTHORIZED,
                "A bearer token is required in the Authorization header.",
                instance,
            );
            let challenges = super::reply::unauthorized(&state.config.base_url);
            for v in challenges.headers().get_all(header::WWW_AUTHENTICATE) {
                resp.headers_mut()
                    .append(header::WWW_AUTHENTICATE, v.clone());
            }
            Err(resp)
        }
    }
}

/// `503` with `Retry-After: 5`: the platform database is unavailable.
pub(super) fn unavailable(instance: &str) -> Response {
    let mut resp = problem(
        StatusCode::SERVICE_UNAVAILABLE,
        "The platform database is unavailable; retry shortly.",
        instance,
    );
    resp.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    resp
}

fn is_json(essence: &str) -> bool {
    essence == "application/json" || essence.ends_with("+json")
}

/// `GET {api_prefix}/openapi.json`: the REST API description (unauthenticated).
pub async fn description(State(state): State<AppState>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        super::openapi::document(&state.config.base_url, &state.config.api_prefix).to_string(),
    )
        .into_response()
}

/// The RFC 9110 section that defines `status`, as the problem's `type`.
fn problem_type(status: StatusCode) -> String {
    let section = match status.as_u16() {
        400 => "15.5.1",
        401 => "15.5.2",
        403 => "15.5.4",
        404 => "15.5.5",
        408 => "15.5.9",
        413 => "15.5.14",
        415 => "15.5.16",
        503 => "15.6.4",
        _ => "15",
    };
    format!("https://tools.ietf.org/html/rfc9110#section-{section}")
}

fn problem_response(status: StatusCode, body: String) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        )],
        body,
    )
        .into_response()
}

/// A `ProblemDetails` answer: the status's reason as `title`, what went wrong as `detail`.
pub(super) fn problem(status: StatusCode, detail: &str, instance: &str) -> Response {
    let body = ProblemDetails {
        r#type: Some(problem_type(status)),
        title: status.canonical_reason().map(str::to_string),
        status: Some(status.as_u16().into()),
        detail: Some(detail.to_string()),
        instance: Some(instance.to_string()),
        extensions: BTreeMap::new(),
    };
    problem_response(
        status,
        serde_json::to_string(&body).expect("a problem serializes"),
    )
}

/// A `400` `ValidationProblemDetails` answer with the errors per field.
fn validation_problem(errors: BTreeMap<String, Vec<String>>, instance: &str) -> Response {
    let status = StatusCode::BAD_REQUEST;
    let body = ValidationProblemDetails {
        r#type: Some(problem_type(status)),
        title: Some("One or more validation errors occurred.".into()),
        status: Some(400),
        detail: Some("See errors for each field (`$` is the whole body).".into()),
        instance: Some(instance.to_string()),
        errors: Some(errors),
        extensions: BTreeMap::new(),
    };
    problem_response(
        status,
        serde_json::to_string(&body).expect("a problem serializes"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_is_open_and_its_two_fields_nullable_strings() {
        assert_eq!(
            read_body(br#"{"client_id": "a", "client_secret": null, "other": [1]}"#).unwrap(),
            OAuthTokenRequest {
                client_id: Some("a".into()),
                client_secret: None
            }
        );
        assert_eq!(read_body(b"{}").unwrap(), OAuthTokenRequest::default());
        let e = read_body(br#"{"client_secret": 5}"#).unwrap_err();
        assert_eq!(
            e["client_secret"],
            vec!["The client_secret field must be a string or null."]
        );
        assert!(read_body(b"[]").unwrap_err().contains_key("$"));
        assert!(
            read_body(b"{").unwrap_err()["$"][0].starts_with("The request body is not valid JSON")
        );
    }

    #[test]
    fn json_media_types() {
        for ok in [
            "application/json",
            "Application/JSON; charset=utf-8",
            "application/json;odata.metadata=minimal;odata.streaming=true",
            "application/merge-patch+json",
        ] {
            assert!(is_json(&media_type(&HeaderValue::from_static(ok))), "{ok}");
        }
        for bad in ["application/x-www-form-urlencoded", "text/plain", ""] {
            assert!(
                !is_json(&media_type(&HeaderValue::from_static(bad))),
                "{bad}"
            );
        }
    }
}
