//! The OAuth 2.1 authorization-server facade: discovery documents that name the service
//! itself, `/authorize` rewritten and redirected to the upstream IdP, `/token` forwarded
//! verbatim. Tokens are issued upstream; the facade only shapes the handshake.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{RawQuery, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::wire::{oauth_error, unique_pairs};
use super::OAuth;
use crate::config::IdpProfile;

/// Largest `/token` body forwarded.
pub const MAX_TOKEN_BODY: usize = 64 * 1024;
/// How long `/token` waits for the IdP.
pub const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(10);

/// `GET /.well-known/oauth-protected-resource` (also under `/mcp`).
pub async fn protected_resource(State(state): State<Arc<OAuth>>) -> Response {
    let base = &state.config.base_url;
    no_store(Json(json!({
        "resource": base,
        "authorization_servers": [base],
        "bearer_methods_supported": ["header"],
        "scopes_supported": [],
    })))
}

/// `GET /.well-known/oauth-authorization-server`: the issuer is `{base_url}` itself.
pub async fn authorization_server(State(state): State<Arc<OAuth>>) -> Response {
    let base = &state.config.base_url;
    no_store(Json(json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
    })))
}

fn no_store(body: impl IntoResponse) -> Response {
    let mut resp = body.into_response();
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

/// `GET /authorize`: checks PKCE S256 and the response type, passes the spec's six parameters
/// through unchanged ([`PASSED_THROUGH`]), rewrites `scope` and `audience`, drops everything
/// else (`resource`, `request`, `request_uri`, `response_mode`, `prompt` …: the IdP acts on
/// none of them), and answers `302` to the IdP.
pub async fn authorize(State(state): State<Arc<OAuth>>, RawQuery(query): RawQuery) -> Response {
    let query = query.as_deref().unwrap_or("");
    // Through the callback, the browser gets a secret whose hash is sealed into the state.
    let mut secret = None;
    let through = match (&state.callback_key, &state.config.authorize_callback) {
        (Some(key), Some(settings)) => {
            let (value, binding) = super::callback::browser_secret();
            secret = Some(value);
            Some(Callback {
                key,
                url: super::callback::url(&state.config.base_url),
                listed: &settings.redirect_uris,
                expires: super::callback::now_secs() + super::keys::PENDING_TTL_SECS,
                browser: Some(binding),
            })
        }
        _ => None,
    };
    let profile = state.config.idp.profile;
    match rewrite_authorize_with(query, &state.config.mcp_audience, profile, through.as_ref()) {
        Ok(query) => {
            let upstream = &state.config.idp.authorize_url;
            let sep = if upstream.contains('?') { '&' } else { '?' };
            let location = format!("{upstream}{sep}{query}");
            let binding = through.as_ref().and_then(|t| t.browser.as_deref());
            let cookie = binding.zip(secret.as_deref()).and_then(|(binding, value)| {
                let name = super::callback::cookie_name(binding);
                let secure = state.config.base_url.starts_with("https://");
                let set = super::callback::set_cookie(
                    &name,
                    value,
                    super::keys::PENDING_TTL_SECS,
                    secure,
                );
                HeaderValue::from_str(&set).ok()
            });
            match HeaderValue::from_str(&location) {
                Ok(v) => {
                    let mut resp = (StatusCode::FOUND, [(header::LOCATION, v)]).into_response();
                    if let Some(cookie) = cookie {
                        resp.headers_mut().insert(header::SET_COOKIE, cookie);
                    }
                    resp
                }
                Err(_) => oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    "the request cannot be redirected",
                ),
            }
        }
        Err((error, description)) => oauth_error(StatusCode::BAD_REQUEST, error, &description),
    }
}

/// The facade's callback, when `LOANHOST_AUTHORIZE_CALLBACK` is on: the IdP is sent `url` as
/// the redirect URI and the client's redirect URI and `state` sealed in its `state`.
pub struct Callback<'a> {
    /// Seals the pending request.
    pub key: &'a super::keys::CallbackKey,
    /// `{base_url}/authorize/callback`.
    pub url: String,
    /// `LOANHOST_AUTHORIZE_REDIRECT_URIS`.
    pub listed: &'a [super::callback::AllowedRedirect],
    /// When the sign-in expires (seconds since the epoch).
    pub expires: u64,
    /// The hash of the secret the browser's cookie holds (sealed into the state).
    pub browser: Option<String>,
}

/// The parameters `/authorize` passes to the IdP unchanged (the spec's list).
pub const PASSED_THROUGH: [&str; 6] = [
    "client_id",
    "redirect_uri",
    "response_type",
    "state",
    "code_challenge",
    "code_challenge_method",
];

/// The upstream query for an incoming `/authorize` query.
pub fn rewrite_authorize(query: &str, audience: &str) -> Result<String, (&'static str, String)> {
    rewrite_authorize_through(query, audience, None)
}

/// The upstream query for an incoming `/authorize` query; with a [`Callback`], the client's
/// `redirect_uri` (which must be allowed: [`super::callback::redirect_allowed`]) and `state`
/// are sealed into the `state` the IdP sees, and its redirect URI is the facade's callback.
pub fn rewrite_authorize_through(
    query: &str,
    audience: &str,
    through: Option<&Callback<'_>>,
) -> Result<String, (&'static str, String)> {
    rewrite_authorize_with(query, audience, IdpProfile::Auth0, through)
}

/// [`rewrite_authorize_through`] for an IdP of `profile`: the specification's rewrite for
/// Auth0 (`audience`); for a standard OpenID Provider the audience as RFC 8707's `resource`
/// and `prompt=consent` beside the `offline_access` the facade asks for.
pub fn rewrite_authorize_with(
    query: &str,
    audience: &str,
    profile: IdpProfile,
    through: Option<&Callback<'_>>,
) -> Result<String, (&'static str, String)> {
    let pairs = unique_pairs(query)?;
    let one = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    match one("response_type") {
        Some("code") => {}
        Some(other) => {
            return Err((
                "unsupported_response_type",
                format!("response_type `{other}` is not supported; use `code`"),
            ))
        }
        None => return Err(("invalid_request", "response_type is required".into())),
    }
    if one("client_id").is_none_or(str::is_empty) {
        return Err(("invalid_request", "client_id is required".into()));
    }
    if one("code_challenge").is_none_or(str::is_empty) {
        return Err((
            "invalid_request",
            "PKCE is required: code_challenge is missing".into(),
        ));
    }
    match one("code_challenge_method") {
        Some("S256") => {}
        Some(m) => {
            return Err((
                "invalid_request",
                format!("code_challenge_method `{m}` is not supported; use S256"),
            ))
        }
        None => {
            return Err((
                "invalid_request",
                "code_challenge_method is required (S256)".into(),
            ))
        }
    }
    if let Some(through) = through {
        let redirect = one("redirect_uri").unwrap_or("");
        if redirect.is_empty() {
            return Err(("invalid_request", "redirect_uri is required".into()));
        }
        let client = one("client_id").unwrap_or("");
        if let Err(why) =
            super::callback::redirect_allowed(redirect, client, through.listed, &through.url)
        {
            return Err((
                "invalid_request",
                format!("redirect_uri `{redirect}` is not allowed: {why}"),
            ));
        }
    }
    let mut out = url::form_urlencoded::Serializer::new(String::new());
    let mut saw_scope = false;
    for (k, v) in &pairs {
        match (k.as_str(), through) {
            // Through the callback: the IdP answers the facade, and `state` is sealed below.
            ("redirect_uri", Some(through)) => {
                out.append_pair(k, &through.url);
            }
            ("state", Some(_)) => {}
            ("scope", _) => {
                saw_scope = true;
                out.append_pair("scope", &upstream_scope(Some(v), audience, profile));
            }
            (k, _) if PASSED_THROUGH.contains(&k) => {
                out.append_pair(k, v);
            }
            // `audience` and `resource` are rewritten; anything else is not the IdP's to read.
            _ => {}
        }
    }
    if !saw_scope {
        out.append_pair("scope", &upstream_scope(None, audience, profile));
    }
    match profile {
        IdpProfile::Auth0 => {
            out.append_pair("audience", audience);
        }
        IdpProfile::Oidc => {
            out.append_pair("resource", audience);
            // OpenID Connect Core §11: `offline_access` is ignored without it.
            out.append_pair("prompt", "consent");
        }
        // The API is named by its scope; Entra refuses `resource` (AADSTS901002).
        IdpProfile::Entra => {}
        // The authorization server's own audience; Okta reads no `resource`, and issues
        // refresh tokens for `offline_access` without a consent prompt.
        IdpProfile::Okta => {}
    }
    if let Some(through) = through {
        let pending = super::keys::Pending {
            redirect_uri: one("redirect_uri").unwrap_or("").to_string(),
            state: one("state").map(str::to_string),
            expires: through.expires,
            browser: through.browser.clone(),
        };
        out.append_pair("state", &through.key.seal(&pending));
    }
    Ok(out.finish())
}

/// OpenID Connect's own scopes: Entra ID reads them beside one API's scope, and every Okta
/// authorization server defines them.
const OPENID_SCOPES: [&str; 4] = ["openid", "profile", "email", "offline_access"];

/// The scope the IdP is asked for, from the client's (`None`: it named none): the client's
/// with `offline_access` added; for Entra ID and Okta its OpenID Connect scopes only (a scope
/// of another API makes Entra refuse the request, AADSTS28000; one the authorization server
/// does not define makes Okta refuse it, `invalid_scope`), then for Entra `<audience>/.default`.
fn upstream_scope(client: Option<&str>, audience: &str, profile: IdpProfile) -> String {
    let asked = client.unwrap_or("").split(' ').filter(|s| !s.is_empty());
    let mut scopes: Vec<String> = match profile {
        IdpProfile::Entra | IdpProfile::Okta => asked
            .filter(|s| OPENID_SCOPES.contains(s))
            .map(str::to_string)
            .collect(),
        _ => asked.map(str::to_string).collect(),
    };
    if !scopes.iter().any(|s| s == "offline_access") {
        scopes.push("offline_access".into());
    }
    if profile == IdpProfile::Entra {
        scopes.push(format!("{}/.default", audience.trim_end_matches('/')));
    }
    scopes.join(" ")
}

/// A `/token` form for Entra ID or Okta: no `resource` or `audience` (Entra refuses
/// `resource`; Okta's tokens carry its authorization server's audience), and the scope of
/// `upstream_scope` in place of the client's: always for Entra (which issues a refreshed
/// token for the API its scope names), for Okta only when the client named one (a refresh
/// without one keeps the scopes granted).
pub fn rewrite_token_scoped(body: &[u8], audience: &str, profile: IdpProfile) -> String {
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(body).into_owned().collect();
    let client = pairs
        .iter()
        .find(|(k, _)| k == "scope")
        .map(|(_, v)| v.as_str());
    let scope = match (client, profile) {
        (None, IdpProfile::Okta) => None,
        _ => Some(upstream_scope(client, audience, profile)),
    };
    let mut out = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in &pairs {
        if k != "resource" && k != "scope" && k != "audience" {
            out.append_pair(k, v);
        }
    }
    if let Some(scope) = scope {
        out.append_pair("scope", &scope);
    }
    out.finish()
}

/// A `/token` form with every `resource` replaced by `audience` (RFC 8707), or `None` when it
/// names none (the IdP then issues for the resource of the authorization).
pub fn rewrite_token_resource(body: &[u8], audience: &str) -> Option<String> {
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(body).into_owned().collect();
    if !pairs.iter().any(|(k, _)| k == "resource") {
        return None;
    }
    let mut out = url::form_urlencoded::Serializer::new(String::new());
    let mut once = false;
    for (k, v) in &pairs {
        if k == "resource" {
            if !std::mem::replace(&mut once, true) {
                out.append_pair(k, audience);
            }
        } else {
            out.append_pair(k, v);
        }
    }
    Some(out.finish())
}

/// `POST /token`: forwards the body verbatim (content type kept, default form-urlencoded) and
/// the `Authorization` header; returns the IdP's status, content type, body and caching
/// headers unchanged. An unreachable IdP is `502`. The body must arrive whole within the body
/// deadline and be at most [`MAX_TOKEN_BODY`]; at most `LOANHOST_MAX_TOKEN_FORWARDS` requests
/// are forwarded at once (more: `503`).
pub async fn token(State(state): State<Arc<OAuth>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    let too_large = || {
        oauth_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request",
            "the request body is too large",
        )
    };
    let body = match state.read_body(&headers, body, MAX_TOKEN_BODY).await {
        Ok(b) => b,
        Err(crate::request_body::BodyError::TooLarge(_)) => return too_large(),
        Err(e) => return oauth_error(e.status(), "invalid_request", &e.to_string()),
    };
    let Ok(_forward) = state.token_forwards.try_acquire() else {
        tracing::warn!("/token refused: LOANHOST_MAX_TOKEN_FORWARDS requests are being forwarded");
        state.refused("token_forwards");
        let mut resp = oauth_error(
            StatusCode::SERVICE_UNAVAILABLE,
            "temporarily_unavailable",
            "too many token requests are being forwarded; retry shortly",
        );
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return resp;
    };
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .cloned()
        .unwrap_or_else(|| HeaderValue::from_static("application/x-www-form-urlencoded"));
    // Through the facade's callback, a code it bound goes back to the IdP as the IdP issued
    // it, with the redirect URI the IdP saw (the callback); anything else goes verbatim.
    let is_form =
        crate::request_body::media_type(&content_type) == "application/x-www-form-urlencoded";
    let body = match (&state.callback_key, is_form) {
        // A body the facade cannot read could carry a code it did not issue past its check.
        (Some(_), false) => {
            state.refused("authorize_callback");
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "token requests are application/x-www-form-urlencoded (RFC 6749 §4.1.3)",
            );
        }
        (Some(key), true) => {
            let callback = super::callback::url(&state.config.base_url);
            match super::callback::rewrite_token_form(key, &body, &callback) {
                Ok(Some(rewritten)) => axum::body::Bytes::from(rewritten),
                Ok(None) => body,
                Err(e) => {
                    state.refused("authorize_callback");
                    return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", &e.to_string());
                }
            }
        }
        _ => body,
    };
    // A standard OpenID Provider issues the token for the `resource` the request names:
    // always the configured audience, whatever the client sent (often its base URL).
    let body = match (state.config.idp.profile, is_form) {
        (IdpProfile::Oidc, true) => {
            match rewrite_token_resource(&body, &state.config.mcp_audience) {
                Some(rewritten) => axum::body::Bytes::from(rewritten),
                None => body,
            }
        }
        (profile @ (IdpProfile::Entra | IdpProfile::Okta), true) => axum::body::Bytes::from(
            rewrite_token_scoped(&body, &state.config.mcp_audience, profile),
        ),
        _ => body,
    };
    let mut req = state
        .http
        .post(&state.config.idp.token_url)
        .timeout(UPSTREAM_TIMEOUT)
        .header(header::CONTENT_TYPE, content_type)
        .header(header::ACCEPT, "application/json")
        .body(body);
    if let Some(auth) = headers.get(header::AUTHORIZATION) {
        req = req.header(header::AUTHORIZATION, auth.clone());
    }
    let upstream = match req.send().await {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(error = %e, url = %state.config.idp.token_url, "identity provider unreachable");
            return oauth_error(
                StatusCode::BAD_GATEWAY,
                "temporarily_unavailable",
                "the identity provider is unreachable",
            );
        }
    };
    let status =
        StatusCode::from_u16(upstream.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut out = HeaderMap::new();
    for name in [header::CONTENT_TYPE, header::CACHE_CONTROL, header::PRAGMA] {
        if let Some(v) = upstream.headers().get(name.as_str()) {
            if let Ok(v) = HeaderValue::from_bytes(v.as_bytes()) {
                out.insert(name, v);
            }
        }
    }
    match upstream.bytes().await {
        Ok(bytes) => (status, out, bytes).into_response(),
        Err(_) => oauth_error(
            StatusCode::BAD_GATEWAY,
            "temporarily_unavailable",
            "the identity provider's reply was cut off",
        ),
    }
}

#[cfg(test)]
mod tests;
