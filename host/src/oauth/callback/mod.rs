//! The facade's own callback for the IdP's authorization response
//! (`LOANHOST_AUTHORIZE_CALLBACK`): IdPs such as Keycloak add RFC 9207's `iss` (their own
//! issuer) to the redirect back to the client, and MCP 2026-07-28 clients compare a present
//! `iss` with the issuer of loanhost's metadata, so a redirect straight from such an IdP to the
//! client fails every sign-in. With the callback on, the IdP redirects to
//! `{base_url}/authorize/callback`; the facade checks the IdP's `iss` against
//! `LOANHOST_IDP_ISSUER` and redirects the browser on to the client without it.
//!
//! Nothing is stored on the server: the client's redirect URI and `state` travel sealed (HMAC)
//! in the `state` sent to the IdP, bound to the browser that started the sign-in by a cookie
//! whose hash the sealed state carries; the code handed to the client is the IdP's code
//! encrypted (ChaCha20-Poly1305) with that redirect URI as associated data, which `/token`
//! opens, with the redirect URI the client presents, before it puts the facade's callback back
//! in the request; a code the facade did not issue is refused there. Hosts that share the key
//! file (`LOANHOST_AUTHORIZE_KEY_FILE`) accept each other's.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use sha2::Sha256;

use super::keys::{CallbackError, CallbackKey, Pending};
use super::wire::{oauth_error, unique_pairs};
use super::OAuth;
pub use crate::config::AllowedRedirect;

/// Where the IdP sends the authorization response, under `{base_url}`.
pub const CALLBACK_PATH: &str = "/authorize/callback";
/// The callback's URL on the server at `base_url`: the redirect URI the IdP is given.
pub fn url(base_url: &str) -> String {
    format!("{base_url}{CALLBACK_PATH}")
}

/// The prefix of the cookie that binds a sign-in to its browser; the rest of its name is the
/// start of the binding the sealed state carries.
const COOKIE_PREFIX: &str = "loanhost_signin_";

impl Pending {
    /// The name of the cookie that holds this sign-in's browser secret.
    pub fn cookie_name(&self) -> Option<String> {
        self.browser.as_deref().map(cookie_name)
    }

    /// Whether `cookies` (the request's `Cookie` header values) hold this sign-in's secret.
    pub fn same_browser<'a>(&self, cookies: impl Iterator<Item = &'a str>) -> bool {
        let (Some(name), Some(binding)) = (self.cookie_name(), self.browser.as_deref()) else {
            return false;
        };
        cookies
            .flat_map(|h| h.split(';'))
            .filter_map(|c| c.trim().split_once('='))
            .filter(|(n, _)| *n == name)
            .any(|(_, secret)| browser_binding(secret).as_bytes() == binding.as_bytes())
    }
}

/// A new browser secret: the cookie's value, and the binding the sealed state carries.
pub fn browser_secret() -> (String, String) {
    use rand::RngCore as _;
    let mut secret = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut secret);
    let secret = URL_SAFE_NO_PAD.encode(secret);
    let binding = browser_binding(&secret);
    (secret, binding)
}

fn browser_binding(secret: &str) -> String {
    use sha2::Digest as _;
    URL_SAFE_NO_PAD.encode(Sha256::digest(secret.as_bytes()))
}

/// The name of the cookie holding the browser secret whose hash is `binding`: the prefix and
/// the binding's start.
pub fn cookie_name(binding: &str) -> String {
    format!("{COOKIE_PREFIX}{}", binding.get(..16).unwrap_or(binding))
}

/// The `Set-Cookie` value of a sign-in's cookie (its secret, or empty with `max_age` 0 to
/// drop it): only for the callback's path, not readable by scripts, sent on the IdP's
/// top-level redirect back (`Lax`), and `Secure` behind https.
pub fn set_cookie(name: &str, value: &str, max_age: u64, secure: bool) -> String {
    format!(
        "{name}={value}; Path={CALLBACK_PATH}; Max-Age={max_age}; HttpOnly; SameSite=Lax{}",
        if secure { "; Secure" } else { "" }
    )
}

/// Seconds since the epoch.
pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Parameters of an authorization response: a client redirect URI that already carries one
/// would reach the client with two of it (clients that read the first take the planted one).
const RESPONSE_PARAMETERS: [&str; 5] = ["code", "state", "error", "error_description", "iss"];

/// Whether the facade may send client `client_id`'s code to `uri`; `Err` says why not. Never
/// the callback itself, a URI with user information, or one that already carries an
/// authorization response's parameters; otherwise a URI listed in
/// `LOANHOST_AUTHORIZE_REDIRECT_URIS` for this client (or for every client), exactly, or a
/// loopback `http` URI on any port (RFC 8252 §7.3, how native clients such as the SDKs
/// listen) written as its canonical form (lower-case host). The IdP only sees the
/// facade's callback, so it can no longer hold the client to its registered URIs; this check
/// stands in for that.
pub fn redirect_allowed(
    uri: &str,
    client_id: &str,
    listed: &[AllowedRedirect],
    callback_url: &str,
) -> Result<(), String> {
    let url = url::Url::parse(uri).map_err(|_| "it is not an absolute URL".to_string())?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err("it carries user information".into());
    }
    if url.fragment().is_some() {
        return Err("it has a fragment".into());
    }
    if let Some((k, _)) = url
        .query_pairs()
        .find(|(k, _)| RESPONSE_PARAMETERS.contains(&k.as_ref()))
    {
        return Err(format!(
            "it already carries `{k}`, a parameter of the authorization response"
        ));
    }
    let mut bare = url.clone();
    bare.set_query(None);
    if bare.as_str().trim_end_matches('/') == callback_url.trim_end_matches('/') {
        return Err("it is this server's own authorization callback".into());
    }
    if listed
        .iter()
        .any(|l| l.uri == uri && l.client_id.as_deref().is_none_or(|c| c == client_id))
    {
        return Ok(());
    }
    let loopback = match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d == "localhost",
        None => false,
    };
    // Canonical: as the URL parser writes it back (lower-case host, no default port spelt
    // out …); a loopback URI without a path (`http://127.0.0.1:9`, RFC 8252's form) gets `/`.
    let canonical = url.as_str() == uri || url.as_str().strip_suffix('/') == Some(uri);
    if url.scheme() == "http" && loopback && canonical {
        return Ok(());
    }
    Err(
        "use a loopback http:// URI written in its canonical form, or one listed for this \
         client in LOANHOST_AUTHORIZE_REDIRECT_URIS"
            .into(),
    )
}

/// The `/token` form body with the code the facade issued replaced by the IdP's and the
/// client's redirect URI by the facade's callback; `Ok(None)` for another grant (forwarded
/// verbatim). An authorization code the facade did not issue is refused: through the
/// callback, every code the IdP issues reaches clients encrypted.
pub fn rewrite_token_form(
    key: &CallbackKey,
    body: &[u8],
    callback_url: &str,
) -> Result<Option<String>, CallbackError> {
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(body).into_owned().collect();
    let one = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    if one("grant_type") != Some("authorization_code") {
        return Ok(None);
    }
    let (code, redirect_uri) = (one("code").unwrap_or(""), one("redirect_uri").unwrap_or(""));
    let inner = key.unbind_code(code, redirect_uri)?;
    let mut out = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in &pairs {
        match k.as_str() {
            "code" => out.append_pair(k, &inner),
            "redirect_uri" => out.append_pair(k, callback_url),
            _ => out.append_pair(k, v),
        };
    }
    Ok(Some(out.finish()))
}

/// `400` with an OAuth error, not to be stored (it answers one browser's sign-in).
fn refuse(error: &str, description: &str) -> Response {
    let mut resp = oauth_error(StatusCode::BAD_REQUEST, error, description);
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// `GET /authorize/callback`: the IdP's authorization response (a code, or an error). The
/// sealed `state` names the client's redirect URI; an `iss` other than `LOANHOST_IDP_ISSUER`
/// is refused before anything reaches the client (RFC 9207 §2.4: no code, no error text);
/// then `302` to the client with the code bound to that URI (or the error, error description
/// and error URI) and the client's own `state`, and no `iss`: loanhost's metadata does not
/// advertise `authorization_response_iss_parameter_supported`, so clients accept its absence.
pub async fn authorize_callback(
    State(state): State<Arc<OAuth>>,
    RawQuery(query): RawQuery,
    headers: axum::http::HeaderMap,
) -> Response {
    let Some(key) = state.callback_key.as_deref() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let pairs = match unique_pairs(query.as_deref().unwrap_or("")) {
        Ok(pairs) => pairs,
        Err((error, description)) => return refuse(error, &description),
    };
    let one = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let Some(sealed) = one("state") else {
        return refuse("invalid_request", "the authorization response has no state");
    };
    let pending = match key.open(sealed, now_secs()) {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(reason = %e, "authorization response refused");
            state.refused("authorize_callback");
            return refuse("invalid_request", &e.to_string());
        }
    };
    let cookies = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok());
    if !pending.same_browser(cookies) {
        let e = CallbackError::OtherBrowser;
        tracing::warn!(reason = %e, "authorization response refused");
        state.refused("authorize_callback");
        return refuse("invalid_request", &e.to_string());
    }
    if let Some(iss) = one("iss") {
        if iss != state.config.idp.issuer {
            tracing::warn!(
                iss = %iss.escape_debug(),
                expected = %state.config.idp.issuer,
                "authorization response refused: iss is not the IdP's issuer"
            );
            state.refused("authorize_callback");
            return refuse(
                "invalid_request",
                "the authorization response's iss is not the identity provider's issuer \
                 (LOANHOST_IDP_ISSUER); its code is not passed on",
            );
        }
    }
    let Ok(mut target) = url::Url::parse(&pending.redirect_uri) else {
        return refuse("invalid_request", "the redirect URI cannot be parsed");
    };
    {
        let mut query = target.query_pairs_mut();
        if let Some(code) = one("code").filter(|c| !c.is_empty()) {
            query.append_pair("code", &key.bind_code(code, &pending.redirect_uri));
        } else if let Some(error) = one("error") {
            // RFC 6749 §4.1.2.1's character set, else a generic code; a description cut to
            // 256 characters of the same set; no `error_uri` (a link of the IdP's choosing,
            // or a forger's, is not the facade's to hand a client).
            let printable = |c: char| matches!(c, ' '..='~') && c != '"' && c != '\\';
            let error = if !error.is_empty() && error.chars().all(printable) {
                error
            } else {
                "server_error"
            };
            query.append_pair("error", error);
            if let Some(v) = one("error_description") {
                let v: String = v.chars().filter(|c| printable(*c)).take(256).collect();
                query.append_pair("error_description", &v);
            }
        } else {
            return refuse(
                "invalid_request",
                "the authorization response has neither a code nor an error",
            );
        }
        if let Some(s) = &pending.state {
            query.append_pair("state", s);
        }
    }
    // The browser's secret is spent: a second use of this state finds no cookie.
    let secure = state.config.base_url.starts_with("https://");
    let clear = pending
        .cookie_name()
        .map(|name| set_cookie(&name, "", 0, secure))
        .and_then(|c| HeaderValue::from_str(&c).ok());
    match HeaderValue::from_str(target.as_str()) {
        Ok(location) => {
            let mut resp = (
                StatusCode::FOUND,
                [
                    (header::LOCATION, location),
                    (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
                    (
                        header::REFERRER_POLICY,
                        HeaderValue::from_static("no-referrer"),
                    ),
                ],
            )
                .into_response();
            if let Some(clear) = clear {
                resp.headers_mut().append(header::SET_COOKIE, clear);
            }
            resp
        }
        Err(_) => refuse(
            "invalid_request",
            "the redirect URI cannot be redirected to",
        ),
    }
}

#[cfg(test)]
mod tests;
