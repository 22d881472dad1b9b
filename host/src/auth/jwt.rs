//! Bearer-token validation: the issuer routes the token to its scheme (the upstream IdP or
//! the internal scheme); the signature is checked with that scheme's JWKS; issuer, audience,
//! `exp` and `nbf` are checked with a small leeway. Only asymmetric algorithms are accepted:
//! `alg: none` and HMAC (which would let a public key act as a shared secret) never are.

use std::sync::Arc;

use base64::Engine as _;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

use super::jwks::Jwks;
use crate::expiring::ExpiringMap;

/// Clock skew tolerated on `exp` and `nbf` by default, in seconds
/// (`LOANHOST_TOKEN_LEEWAY_SECS`).
pub const LEEWAY_SECS: u64 = 30;

/// Asymmetric algorithms accepted.
const ACCEPTED: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// One bearer scheme: tokens of one issuer, signed by its keys.
pub struct Scheme {
    /// `upstream` or `internal` (for logs).
    pub name: &'static str,
    /// Exact `iss`.
    pub issuer: String,
    /// The issuer's keys.
    pub jwks: Arc<Jwks>,
}

/// Validates tokens of the configured schemes for one audience.
pub struct TokenValidator {
    schemes: Vec<Scheme>,
    audience: String,
    cache: ValidationCache,
    leeway: u64,
}

/// Results of recent validations, keyed by [`super::token_key`]: a token presented again is
/// not verified again (RSA verification is most of an authenticated request's CPU, and a
/// flood of one forged token would otherwise cost a verification each time). A valid token
/// is remembered until its `exp` (at most [`CACHE_VALID_FOR`]); a refused one for
/// [`CACHE_INVALID_FOR`], except when its key was unknown (a rotation may bring the key).
type ValidationCache = ExpiringMap<[u8; 32], Cached>;

#[derive(Clone)]
enum Cached {
    Valid(Arc<Map<String, Value>>, &'static str),
    Invalid(String),
}

/// Longest a validated token is remembered.
pub const CACHE_VALID_FOR: std::time::Duration = std::time::Duration::from_secs(300);
/// How long a refused token is remembered.
pub const CACHE_INVALID_FOR: std::time::Duration = std::time::Duration::from_secs(60);
/// Tokens remembered at most (past this, expired entries go, then all).
const CACHE_MAX: usize = 10_000;

impl TokenValidator {
    /// A validator for `audience` over `schemes`.
    pub fn new(audience: impl Into<String>, schemes: Vec<Scheme>) -> Self {
        TokenValidator {
            schemes,
            audience: audience.into(),
            cache: ValidationCache::new(CACHE_MAX),
            leeway: LEEWAY_SECS,
        }
    }

    /// The same validator tolerating `leeway` of clock skew on `exp` and `nbf`.
    pub fn with_leeway(mut self, leeway: std::time::Duration) -> Self {
        self.leeway = leeway.as_secs();
        self
    }

    /// Validates a compact JWS and returns its claims and the scheme that accepted it,
    /// answering from the cache for a token seen recently.
    pub async fn validate(
        &self,
        token: &str,
    ) -> Result<(Arc<Map<String, Value>>, &'static str), String> {
        self.validate_keyed(token, super::token_key(token)).await
    }

    /// As [`TokenValidator::validate`], for a token whose [`super::token_key`] is `key`.
    pub async fn validate_keyed(
        &self,
        token: &str,
        key: [u8; 32],
    ) -> Result<(Arc<Map<String, Value>>, &'static str), String> {
        match self.cache.get(&key) {
            Some((Cached::Valid(claims, scheme), _)) => return Ok((claims, scheme)),
            Some((Cached::Invalid(reason), _)) => return Err(reason),
            None => {}
        }
        let result = self.verify(token).await.map(|(c, s)| (Arc::new(c), s));
        match &result {
            Ok((claims, scheme)) => {
                let epoch = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0);
                let left = claims
                    .get("exp")
                    .and_then(Value::as_u64)
                    .map(|exp| exp.saturating_sub(epoch))
                    .unwrap_or(0);
                let ttl = std::time::Duration::from_secs(left).min(CACHE_VALID_FOR);
                if !ttl.is_zero() {
                    let valid = Cached::Valid(claims.clone(), scheme);
                    self.cache.insert(key, valid, ttl);
                }
            }
            Err(reason)
                if !reason.starts_with("no signing key")
                    && !reason.starts_with("the token has no kid") =>
            {
                let invalid = Cached::Invalid(reason.clone());
                self.cache.insert(key, invalid, CACHE_INVALID_FOR);
            }
            Err(_) => {}
        }
        result
    }

    /// Verifies a token: algorithm, issuer → scheme → key, signature, claims.
    async fn verify(&self, token: &str) -> Result<(Map<String, Value>, &'static str), String> {
        let header =
            jsonwebtoken::decode_header(token).map_err(|e| format!("malformed header: {e}"))?;
        if !ACCEPTED.contains(&header.alg) {
            return Err(format!("algorithm {:?} is not accepted", header.alg));
        }
        let issuer = unverified_issuer(token)?;
        let scheme = self
            .schemes
            .iter()
            .find(|s| s.issuer == issuer)
            .ok_or_else(|| format!("unknown issuer {issuer:?}"))?;
        let jwk = scheme.jwks.key(header.kid.as_deref()).await?;
        if let Some(key_alg) = jwk.common.key_algorithm {
            if format!("{key_alg:?}") != format!("{:?}", header.alg) {
                return Err(format!(
                    "the key is for {key_alg:?}, the token says {:?}",
                    header.alg
                ));
            }
        }
        let key = DecodingKey::from_jwk(&jwk).map_err(|e| format!("unusable key: {e}"))?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&scheme.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.leeway = self.leeway;
        validation.validate_nbf = true;
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation)
            .map_err(|e| e.to_string())?;
        Ok((data.claims, scheme.name))
    }
}

/// Reads `iss` without verifying (only to pick the scheme whose keys then verify it).
fn unverified_issuer(token: &str) -> Result<String, String> {
    let payload = token.split('.').nth(1).ok_or("not a compact JWS")?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .map_err(|_| "payload is not base64url")?;
    let claims: Map<String, Value> =
        serde_json::from_slice(&bytes).map_err(|_| "payload is not a JSON object")?;
    match claims.get("iss") {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => Err("no `iss` claim".into()),
    }
}
