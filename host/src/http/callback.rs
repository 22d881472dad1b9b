//! The facade's own callback for the IdP's authorization response
//! (`LOANHOST_AUTHORIZE_CALLBACK`): IdPs such as Keycloak add RFC 9207's `iss` (their own
//! issuer) to the redirect back to the client, and MCP 2026-07-28 clients compare a present
//! `iss` with the issuer of loanhost's metadata, so a redirect straight from such an IdP to the
//! client fails every sign-in. With the callback on, the IdP redirects to
//! `{base_url}/authorize/callback`; the facade checks the IdP's `iss` against
//! `LOANHOST_IDP_ISSUER` and redirects the browser on to the client without it.
//!
//! Nothing is stored on the server: the client's redirect URI and `state` travel sealed (HMAC)
//! in the `state` sent to the IdP, and the code handed to the client carries a MAC that binds it
//! to that redirect URI, which `/token` checks before it puts the facade's callback back in the
//! request. Hosts that share the key file (`LOANHOST_AUTHORIZE_KEY_FILE`) accept each other's.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use super::AppState;

/// Where the IdP sends the authorization response, under `{base_url}`.
pub const CALLBACK_PATH: &str = "/authorize/callback";
/// The callback's URL on the server at `base_url`: the redirect URI the IdP is given.
pub fn url(base_url: &str) -> String {
    format!("{base_url}{CALLBACK_PATH}")
}

/// How long a sign-in may take between `/authorize` and the callback.
pub const PENDING_TTL_SECS: u64 = 600;
/// The prefix of a code bound to its redirect URI by the facade.
const CODE_PREFIX: &str = "lhc1.";

/// Why a callback's `state` or a bound code was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallbackError {
    /// Not sealed by this key (forged, altered, or another deployment's).
    #[error("the state is not one this server issued")]
    Forged,
    /// Sealed, but the sign-in took longer than [`PENDING_TTL_SECS`].
    #[error("the sign-in took longer than {PENDING_TTL_SECS} s; start it again")]
    Expired,
    /// A bound code presented with another redirect URI than the one it was sent to.
    #[error("the code was not sent to this redirect_uri")]
    OtherRedirect,
}

/// The client's side of a sign-in under way, sealed into the `state` the IdP sees.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    /// The client's redirect URI.
    #[serde(rename = "r")]
    pub redirect_uri: String,
    /// The client's own `state`, if it sent one.
    #[serde(rename = "s", default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Expiry, seconds since the epoch.
    #[serde(rename = "e")]
    pub expires: u64,
}

/// The key that seals pending requests and binds codes.
pub struct CallbackKey(Vec<u8>);

impl CallbackKey {
    /// The key in `path`, made (32 random bytes, mode 0600) when there is none.
    pub fn load_or_create(path: &Path) -> std::io::Result<CallbackKey> {
        let bytes = crate::secret_file::read_or_create(path, || {
            use rand::RngCore as _;
            let mut key = vec![0u8; 32];
            rand::rngs::OsRng.fill_bytes(&mut key);
            Ok(key)
        })?;
        if bytes.len() < 32 {
            return Err(std::io::Error::other(format!(
                "{} holds {} bytes; a key needs 32",
                path.display(),
                bytes.len()
            )));
        }
        Ok(CallbackKey(bytes))
    }

    /// A key of these bytes (tests).
    pub fn from_bytes(bytes: &[u8]) -> CallbackKey {
        CallbackKey(bytes.to_vec())
    }

    /// The MAC of `parts` for `purpose`, each part length-prefixed so no two inputs collide.
    fn mac(&self, purpose: &str, parts: &[&[u8]]) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key size");
        for part in std::iter::once(purpose.as_bytes()).chain(parts.iter().copied()) {
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part);
        }
        mac
    }

    /// `pending` as the `state` to send the IdP: its JSON and its MAC, base64url, dot-joined.
    pub fn seal(&self, pending: &Pending) -> String {
        let json = serde_json::to_vec(pending).expect("a pending request serializes");
        let tag = self.mac("state", &[&json]).finalize().into_bytes();
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(&json),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// The pending request sealed in `state`, if this key sealed it and it has not expired.
    pub fn open(&self, state: &str, now: u64) -> Result<Pending, CallbackError> {
        let (body, tag) = state.split_once('.').ok_or(CallbackError::Forged)?;
        let json = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| CallbackError::Forged)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| CallbackError::Forged)?;
        self.mac("state", &[&json])
            .verify_slice(&tag)
            .map_err(|_| CallbackError::Forged)?;
        let pending: Pending = serde_json::from_slice(&json).map_err(|_| CallbackError::Forged)?;
        if pending.expires < now {
            return Err(CallbackError::Expired);
        }
        Ok(pending)
    }

    /// The IdP's `code` as handed to the client: bound to the redirect URI it is sent to.
    pub fn bind_code(&self, code: &str, redirect_uri: &str) -> String {
        let tag = self
            .mac("code", &[redirect_uri.as_bytes(), code.as_bytes()])
            .finalize()
            .into_bytes();
        format!(
            "{CODE_PREFIX}{}.{}",
            URL_SAFE_NO_PAD.encode(code),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// The IdP's code inside a bound `code`, checked against the `redirect_uri` the client
    /// presents; `Ok(None)` for a code the facade did not bind (passed on as it is).
    pub fn unbind_code(
        &self,
        code: &str,
        redirect_uri: &str,
    ) -> Result<Option<String>, CallbackError> {
        let Some(rest) = code.strip_prefix(CODE_PREFIX) else {
            return Ok(None);
        };
        let (inner, tag) = rest.split_once('.').ok_or(CallbackError::Forged)?;
        let inner = URL_SAFE_NO_PAD
            .decode(inner)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or(CallbackError::Forged)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| CallbackError::Forged)?;
        self.mac("code", &[redirect_uri.as_bytes(), inner.as_bytes()])
            .verify_slice(&tag)
            .map_err(|_| CallbackError::OtherRedirect)?;
        Ok(Some(inner))
    }
}

/// Seconds since the epoch.
pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Whether the facade may send a code to `uri`: a loopback `http` URI on any port (RFC 8252
/// §7.3, how native clients such as the SDKs listen), or one listed exactly in
/// `LOANHOST_AUTHORIZE_REDIRECT_URIS`. The IdP only sees the facade's callback, so it can no
/// longer hold the client to its registered URIs; this check stands in for that.
pub fn redirect_allowed(uri: &str, listed: &[String]) -> bool {
    if listed.iter().any(|l| l == uri) {
        return true;
    }
    let Ok(url) = url::Url::parse(uri) else {
        return false;
    };
    let loopback = match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    };
    url.scheme() == "http" && loopback && url.fragment().is_none() && url.username().is_empty()
}

/// The `/token` form body with a bound code replaced by the IdP's and the client's redirect
/// URI by the facade's callback; `Ok(None)` when nothing is to change (another grant, or a
/// code the facade did not bind), so the body is forwarded verbatim.
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
    let (Some(code), redirect_uri) = (one("code"), one("redirect_uri").unwrap_or("")) else {
        return Ok(None);
    };
    let Some(inner) = key.unbind_code(code, redirect_uri)? else {
        return Ok(None);
    };
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
    let mut resp = super::facade::oauth_error(StatusCode::BAD_REQUEST, error, description);
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
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
) -> Response {
    let Some(key) = state.authorize_key.as_deref() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let pairs = match super::facade::unique_pairs(query.as_deref().unwrap_or("")) {
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
            query.append_pair("error", error);
            for k in ["error_description", "error_uri"] {
                if let Some(v) = one(k) {
                    query.append_pair(k, v);
                }
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
    match HeaderValue::from_str(target.as_str()) {
        Ok(location) => (
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
            .into_response(),
        Err(_) => refuse(
            "invalid_request",
            "the redirect URI cannot be redirected to",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> CallbackKey {
        CallbackKey::from_bytes(&[7u8; 32])
    }

    fn pending(expires: u64) -> Pending {
        Pending {
            redirect_uri: "http://127.0.0.1:9/cb".into(),
            state: Some("client-state".into()),
            expires,
        }
    }

    #[test]
    fn a_sealed_state_opens_until_it_expires() {
        let sealed = key().seal(&pending(1000));
        assert_eq!(key().open(&sealed, 1000), Ok(pending(1000)));
        assert_eq!(key().open(&sealed, 1001), Err(CallbackError::Expired));
    }

    #[test]
    fn an_altered_or_foreign_state_is_refused() {
        let sealed = key().seal(&pending(1000));
        let (body, tag) = sealed.split_once('.').unwrap();
        // Another redirect URI with the old tag.
        let mut other = pending(1000);
        other.redirect_uri = "https://evil.example/cb".into();
        let forged = format!(
            "{}.{tag}",
            URL_SAFE_NO_PAD.encode(serde_json::to_vec(&other).unwrap())
        );
        assert_eq!(key().open(&forged, 0), Err(CallbackError::Forged));
        let foreign = CallbackKey::from_bytes(&[8u8; 32]).seal(&pending(1000));
        assert_eq!(key().open(&foreign, 0), Err(CallbackError::Forged));
        assert_eq!(key().open(body, 0), Err(CallbackError::Forged));
        assert_eq!(key().open("client-state", 0), Err(CallbackError::Forged));
    }

    #[test]
    fn a_bound_code_opens_only_with_its_redirect_uri() {
        let bound = key().bind_code("idp-code", "http://127.0.0.1:9/cb");
        assert!(bound.starts_with("lhc1."));
        assert_eq!(
            key().unbind_code(&bound, "http://127.0.0.1:9/cb"),
            Ok(Some("idp-code".into()))
        );
        assert_eq!(
            key().unbind_code(&bound, "http://127.0.0.1:10/cb"),
            Err(CallbackError::OtherRedirect)
        );
        assert_eq!(key().unbind_code("plain-code", "x"), Ok(None));
        assert_eq!(
            key().unbind_code("lhc1.bm9wZQ", "x"),
            Err(CallbackError::Forged)
        );
    }

    #[test]
    fn loopback_http_redirects_are_allowed_on_any_port_others_only_when_listed() {
        let listed = vec!["https://claude.ai/api/mcp/auth_callback".to_string()];
        for ok in [
            "http://127.0.0.1:33418/callback",
            "http://localhost:9/cb",
            "http://[::1]:8000/",
            "https://claude.ai/api/mcp/auth_callback",
        ] {
            assert!(redirect_allowed(ok, &listed), "{ok}");
        }
        for no in [
            "https://evil.example/cb",
            "https://claude.ai/api/mcp/auth_callback/x",
            "https://127.0.0.1/cb",
            "http://127.0.0.1.evil.example/cb",
            "http://user@127.0.0.1/cb",
            "http://127.0.0.1/cb#frag",
            "javascript:alert(1)",
            "not a url",
        ] {
            assert!(!redirect_allowed(no, &listed), "{no}");
        }
    }

    #[test]
    fn the_token_form_gets_the_idps_code_and_the_callback_only_for_a_bound_code() {
        let k = key();
        let bound = k.bind_code("idp-code", "http://127.0.0.1:9/cb");
        let body = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("grant_type", "authorization_code")
            .append_pair("client_id", "c")
            .append_pair("code", &bound)
            .append_pair("code_verifier", "v")
            .append_pair("redirect_uri", "http://127.0.0.1:9/cb")
            .finish();
        let out = rewrite_token_form(&k, body.as_bytes(), "https://lh/authorize/callback")
            .unwrap()
            .unwrap();
        assert_eq!(
            out,
            "grant_type=authorization_code&client_id=c&code=idp-code&code_verifier=v&redirect_uri=https%3A%2F%2Flh%2Fauthorize%2Fcallback"
        );
        let other = body.replace("%3A9%2F", "%3A10%2F");
        assert_eq!(
            rewrite_token_form(&k, other.as_bytes(), "cb"),
            Err(CallbackError::OtherRedirect)
        );
        let refresh = b"grant_type=refresh_token&refresh_token=r";
        assert_eq!(rewrite_token_form(&k, refresh, "cb"), Ok(None));
        let unbound = b"grant_type=authorization_code&code=plain&redirect_uri=x";
        assert_eq!(rewrite_token_form(&k, unbound, "cb"), Ok(None));
    }
}
