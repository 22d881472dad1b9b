//! Authentication: who the caller is. Owns bearer-token extraction, token validation and
//! agent resolution; hands the rest of the host an [`Identity`], never a token.

pub mod jwks;
pub mod jwt;

use std::future::Future;
use std::pin::Pin;

use axum::http::HeaderMap;

pub use crate::identity::{Identity, RoleCode, ScopeFacts, NAME_READER_ROLES};

/// Why a request is not authenticated. Every case answers the same `401` challenge; the
/// reason is only logged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// No `Authorization` header.
    #[error("no bearer token")]
    Missing,
    /// A header that is not `Bearer <token>`.
    #[error("malformed Authorization header")]
    Malformed,
    /// The token failed validation.
    #[error("invalid token: {0}")]
    InvalidToken(String),
    /// A valid token whose email matches no platform agent.
    #[error("no platform agent for the token's email")]
    UnknownAgent,
    /// The agent directory could not be read.
    #[error("agent directory unavailable: {0}")]
    Unavailable(String),
}

/// A boxed future, for object-safe async traits.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Turns request headers into a caller identity.
pub trait Authenticator: Send + Sync {
    /// Authenticates the request from its headers; `key` is its bearer token's [`token_key`]
    /// when an earlier layer computed it already.
    fn authenticate<'a>(
        &'a self,
        headers: &'a HeaderMap,
        key: Option<TokenKey>,
    ) -> BoxFuture<'a, Result<Identity, AuthError>>;
}

/// The key a token is remembered by (its SHA-256): in the validation cache and the penalty box.
pub fn token_key(token: &str) -> [u8; 32] {
    use sha2::Digest as _;
    sha2::Sha256::digest(token.as_bytes()).into()
}

/// A request's bearer-token [`token_key`], computed once by the first layer that needs it
/// and carried in the request's extensions for the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenKey(pub [u8; 32]);

impl TokenKey {
    /// The key of `token`.
    pub fn of(token: &str) -> Self {
        TokenKey(token_key(token))
    }
}

/// Extracts the token of an `Authorization: Bearer <token>` header.
pub fn bearer_token(headers: &HeaderMap) -> Result<&str, AuthError> {
    let mut values = headers.get_all(axum::http::header::AUTHORIZATION).iter();
    let value = values.next().ok_or(AuthError::Missing)?;
    if values.next().is_some() {
        return Err(AuthError::Malformed);
    }
    let value = value.to_str().map_err(|_| AuthError::Malformed)?;
    let (scheme, token) = value.split_once(' ').ok_or(AuthError::Malformed)?;
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() || token.contains(' ') {
        return Err(AuthError::Malformed);
    }
    Ok(token)
}

/// The production authenticator: validates the bearer JWT (scheme routed by issuer), reads
/// the email claim, and resolves the platform agent, its role codes and its scope facts from
/// the platform's data on every request (through the agent directory, which answers from
/// memory only while the data has not changed).
pub struct JwtAuthenticator {
    validator: jwt::TokenValidator,
    directory: std::sync::Arc<crate::data::directory::Directory>,
    email_claims: Vec<String>,
    verified_claims: Vec<String>,
    require_verified: bool,
}

impl JwtAuthenticator {
    /// An authenticator over `validator`, resolving agents in `directory`, reading the email
    /// from the first of `email_claims` a token carries ([`email_claims`]).
    pub fn new(
        validator: jwt::TokenValidator,
        directory: std::sync::Arc<crate::data::directory::Directory>,
        email_claims: Vec<String>,
    ) -> Self {
        let verified_claims = email_claims
            .iter()
            .map(|c| format!("{c}_verified"))
            .collect();
        JwtAuthenticator {
            validator,
            directory,
            email_claims,
            verified_claims,
            require_verified: false,
        }
    }

    /// Refuses tokens without an `email_verified: true` claim (by default only an explicit
    /// `false` is refused).
    pub fn require_email_verified(mut self, required: bool) -> Self {
        self.require_verified = required;
        self
    }

    /// Checks the `_verified` claim that belongs to the email claim in use (`email` →
    /// `email_verified`, `{ns}/email` → `{ns}/email_verified`), never another one: `false`
    /// (or `"false"`) is always refused; a missing claim only when required.
    fn check_verified(
        &self,
        claims: &serde_json::Map<String, serde_json::Value>,
        email_claim: usize,
    ) -> Result<(), AuthError> {
        use serde_json::Value;
        let found = claims.get(&self.verified_claims[email_claim]);
        match found {
            Some(Value::Bool(true)) => Ok(()),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(()),
            Some(other) => Err(AuthError::InvalidToken(format!(
                "the email is not verified (email_verified = {other})"
            ))),
            None if self.require_verified => Err(AuthError::InvalidToken(
                "the token has no email_verified claim (LOANHOST_REQUIRE_EMAIL_VERIFIED)".into(),
            )),
            None => Ok(()),
        }
    }
}

impl Authenticator for JwtAuthenticator {
    fn authenticate<'a>(
        &'a self,
        headers: &'a HeaderMap,
        key: Option<TokenKey>,
    ) -> BoxFuture<'a, Result<Identity, AuthError>> {
        Box::pin(async move {
            let token = bearer_token(headers)?;
            debug_assert!(key.is_none_or(|k| k == TokenKey::of(token)));
            let key = key.unwrap_or_else(|| TokenKey::of(token));
            let (claims, scheme) = self
                .validator
                .validate_keyed(token, key.0)
                .await
                .map_err(AuthError::InvalidToken)?;
            let (used, email) = self
                .email_claims
                .iter()
                .enumerate()
                .find_map(|(i, c)| claims.get(c).and_then(|v| v.as_str()).map(|e| (i, e)))
                .filter(|(_, e)| !e.trim().is_empty())
                .ok_or_else(|| {
                    AuthError::InvalidToken(format!(
                        "no email claim ({})",
                        self.email_claims.join(" or ")
                    ))
                })?;
            self.check_verified(&claims, used)?;
            let entry = self
                .directory
                .agent_by_email(email)
                .await
                .map_err(|e| AuthError::Unavailable(e.to_string()))?
                .ok_or(AuthError::UnknownAgent)?;
            let identity = entry.agent.identity().with_scope_facts(entry.facts.clone());
            tracing::debug!(user_id = %identity.user_id, scheme, "authenticated");
            Ok(identity)
        })
    }
}

/// Builds the production authenticator from configuration: the upstream scheme (with
/// `upstream_keys` when the upstream's keys are known without fetching them: the embedded dev
/// IdP's) and the internal scheme.
pub fn from_config(
    config: &crate::config::Config,
    directory: std::sync::Arc<crate::data::directory::Directory>,
    upstream_keys: Option<jsonwebtoken::jwk::JwkSet>,
) -> std::sync::Arc<dyn Authenticator> {
    let upstream_keys = match upstream_keys {
        Some(keys) => jwks::Jwks::fixed(keys),
        None => jwks::Jwks::from_url(config.idp.jwks_url.clone()),
    };
    let mut schemes = vec![jwt::Scheme {
        name: "upstream",
        issuer: config.idp.issuer.clone(),
        jwks: std::sync::Arc::new(upstream_keys),
    }];
    if let Some(internal) = &config.internal {
        schemes.push(jwt::Scheme {
            name: "internal",
            issuer: internal.issuer.clone(),
            jwks: std::sync::Arc::new(jwks::Jwks::from_url(internal.jwks_url.clone())),
        });
    }
    let mut validator = jwt::TokenValidator::new(config.mcp_audience.clone(), schemes)
        .with_leeway(config.token_leeway);
    if config.idp.profile == crate::config::IdpProfile::Entra {
        if let Some(app_id) = entra_application_id(&config.mcp_audience) {
            validator = validator.also_for(app_id);
        }
    }
    if config.require_email_verified {
        tracing::info!("tokens must carry email_verified: true beside their email claim");
    } else {
        tracing::info!(
            "tokens whose email_verified claim is false are refused; tokens without one are \
             accepted (the IdP vouches for the email): set LOANHOST_REQUIRE_EMAIL_VERIFIED=true \
             when the IdP lets users set an unverified email"
        );
    }
    std::sync::Arc::new(
        JwtAuthenticator::new(validator, directory, email_claims(config))
            .require_email_verified(config.require_email_verified),
    )
}

/// The claims a token's email is read from, first found first: `LOANHOST_EMAIL_CLAIM` when
/// set; else for Entra ID [`ENTRA_EMAIL_CLAIMS`]; else `email`, then
/// `{LOANHOST_CLAIMS_NAMESPACE}/email`.
pub fn email_claims(config: &crate::config::Config) -> Vec<String> {
    match (config.email_claim.as_deref(), config.idp.profile) {
        (Some(claim), _) => vec![claim.to_string()],
        (None, crate::config::IdpProfile::Entra) => ENTRA_EMAIL_CLAIMS.map(str::to_string).to_vec(),
        (None, _) => vec![
            "email".to_string(),
            format!("{}/email", config.claims_namespace),
        ],
    }
}

/// Where Entra ID's access tokens carry a work account's email, most trusted first: `upn`
/// (set by the tenant's administrators; an optional claim of v2 tokens), `preferred_username`
/// (v2 tokens' sign-in name), `email` (an optional claim, which a user may be able to set).
pub const ENTRA_EMAIL_CLAIMS: [&str; 3] = ["upn", "preferred_username", "email"];

/// The application id of an Entra ID audience `api://<application id>` (Entra's default App
/// ID URI): Entra's v2 access tokens name the API by that id in `aud`, v1 tokens by the URI.
pub fn entra_application_id(audience: &str) -> Option<String> {
    let id = audience.strip_prefix("api://")?.trim_end_matches('/');
    let uuid = id.len() == 36
        && id.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        });
    uuid.then(|| id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("authorization", HeaderValue::from_str(v).unwrap());
        h
    }

    #[test]
    fn bearer_extraction() {
        assert_eq!(bearer_token(&headers("Bearer abc")), Ok("abc"));
        assert_eq!(bearer_token(&headers("bearer abc")), Ok("abc"));
        assert_eq!(
            bearer_token(&headers("Basic abc")),
            Err(AuthError::Malformed)
        );
        assert_eq!(bearer_token(&headers("Bearer")), Err(AuthError::Malformed));
        assert_eq!(
            bearer_token(&headers("Bearer a b")),
            Err(AuthError::Malformed)
        );
        assert_eq!(bearer_token(&HeaderMap::new()), Err(AuthError::Missing));
    }

    #[test]
    fn an_entra_app_id_uri_names_its_application_id() {
        let id = "4f1c0a7e-5b2d-4c3e-9a8f-0123456789ab";
        assert_eq!(
            entra_application_id(&format!("api://{id}")),
            Some(id.into())
        );
        assert_eq!(
            entra_application_id(&format!("api://{id}/")),
            Some(id.into())
        );
        for other in [
            "api://loanhost",
            "https://loanhost.local/mcp",
            "api://4f1c0a7e-5b2d-4c3e-9a8f-0123456789ab/mcp",
            "api://4f1c0a7e_5b2d-4c3e-9a8f-0123456789ab",
            "4f1c0a7e-5b2d-4c3e-9a8f-0123456789ab",
        ] {
            assert_eq!(entra_application_id(other), None, "{other}");
        }
    }
}
