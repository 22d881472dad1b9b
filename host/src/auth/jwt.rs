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
    audiences: Vec<String>,
    valid: ExpiringMap<[u8; 32], Valid>,
    refused: ExpiringMap<[u8; 32], String>,
    leeway: u64,
}

/// Results of recent validations are kept, keyed by [`super::token_key`]: a token presented
/// again is not verified again (RSA verification is most of an authenticated request's CPU,
/// and a flood of one forged token would otherwise cost a verification each time). A valid
/// token is remembered until its `exp` (at most [`CACHE_VALID_FOR`]); a refused one for
/// [`CACHE_INVALID_FOR`], except when its key was unknown (a rotation may bring the key).
/// Valid and refused tokens are kept apart, each map with its own bound: a flood of distinct
/// bad tokens fills (and clears) only the refused one, never evicting the valid tokens. A
/// valid token is answered from the cache only while its scheme's key set still holds the
/// key that verified it: a key removed from the issuer's set (revoked, or rotated out)
/// refuses its tokens from the moment this host's copy of the set no longer holds it.
#[derive(Clone)]
struct Valid {
    claims: Arc<Map<String, Value>>,
    /// The scheme that accepted it (its index in `schemes`).
    scheme: usize,
    /// The `kid` it named, and the key that verified it.
    kid: Option<String>,
    key: Arc<jsonwebtoken::jwk::Jwk>,
}

/// Longest a validated token is remembered.
pub const CACHE_VALID_FOR: std::time::Duration = std::time::Duration::from_secs(300);
/// How long a refused token is remembered.
pub const CACHE_INVALID_FOR: std::time::Duration = std::time::Duration::from_secs(60);
/// Valid tokens remembered at most, and refused ones (past this, expired entries go, then
/// all of that map).
const CACHE_MAX: usize = 10_000;

impl TokenValidator {
    /// A validator for `audience` over `schemes`.
    pub fn new(audience: impl Into<String>, schemes: Vec<Scheme>) -> Self {
        TokenValidator {
            schemes,
            audiences: vec![audience.into()],
            valid: ExpiringMap::new(CACHE_MAX),
            refused: ExpiringMap::new(CACHE_MAX),
            leeway: LEEWAY_SECS,
        }
    }

    /// The same validator also accepting tokens whose `aud` is `audience` (Entra ID names an
    /// API by its application id in v2 tokens, by its App ID URI in v1 tokens).
    pub fn also_for(mut self, audience: impl Into<String>) -> Self {
        self.audiences.push(audience.into());
        self
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
        if let Some((valid, _)) = self.valid.get(&key) {
            let scheme = &self.schemes[valid.scheme];
            if scheme.jwks.holds(valid.kid.as_deref(), &valid.key) {
                return Ok((valid.claims, scheme.name));
            }
            // Its key is gone from the issuer's set: verified again (and refused) below.
            self.valid.remove(&key);
        }
        if let Some((reason, _)) = self.refused.get(&key) {
            return Err(reason);
        }
        let verified = self.verify(token).await;
        let result = verified
            .as_ref()
            .map(|v| (v.claims.clone(), self.schemes[v.scheme].name))
            .map_err(Clone::clone);
        match verified {
            Ok(valid) => {
                let claims = &valid.claims;
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
                    self.valid.insert(key, valid, ttl);
                }
            }
            Err(reason)
                if !reason.starts_with("no signing key")
                    && !reason.starts_with("the token has no kid") =>
            {
                self.refused.insert(key, reason.clone(), CACHE_INVALID_FOR);
            }
            Err(_) => {}
        }
        result
    }

    /// Verifies a token: algorithm, issuer → scheme → key, signature, claims.
    async fn verify(&self, token: &str) -> Result<Valid, String> {
        let header =
            jsonwebtoken::decode_header(token).map_err(|e| format!("malformed header: {e}"))?;
        if !ACCEPTED.contains(&header.alg) {
            return Err(format!("algorithm {:?} is not accepted", header.alg));
        }
        let issuer = unverified_issuer(token)?;
        let (index, scheme) = self
            .schemes
            .iter()
            .enumerate()
            .find(|(_, s)| s.issuer == issuer)
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
        validation.set_audience(&self.audiences);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.leeway = self.leeway;
        validation.validate_nbf = true;
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation)
            .map_err(|e| e.to_string())?;
        Ok(Valid {
            claims: Arc::new(data.claims),
            scheme: index,
            kid: header.kid,
            key: Arc::new(jwk),
        })
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

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use jsonwebtoken::{EncodingKey, Header};
    use serde_json::json;

    use super::*;

    const ISSUER: &str = "https://idp.test";
    /// A 2048-bit RSA key kept for these tests alone (PKCS#1 PEM), and its public JWKS.
    const KEY_PEM: &str = include_str!("testdata/test-key.pem");
    const JWKS: &str = include_str!("testdata/test-jwks.json");

    fn jwks() -> jsonwebtoken::jwk::JwkSet {
        serde_json::from_str(JWKS).unwrap()
    }

    /// `claims` signed RS256 with the test key and its `kid`.
    fn sign(claims: &serde_json::Value) -> String {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = jwks().keys[0].common.key_id.clone();
        let key = EncodingKey::from_rsa_pem(KEY_PEM.as_bytes()).unwrap();
        jsonwebtoken::encode(&header, claims, &key).unwrap()
    }

    fn validator() -> TokenValidator {
        TokenValidator::new(
            "aud",
            vec![Scheme {
                name: "upstream",
                issuer: ISSUER.into(),
                jwks: Arc::new(Jwks::fixed(jwks())),
            }],
        )
    }

    fn now() -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64
    }

    /// A token expiring `exp_in` seconds from now (negative: in the past).
    fn token(exp_in: i64) -> String {
        sign(&json!({"iss": ISSUER, "aud": "aud", "email": "a@b.c", "exp": now() + exp_in}))
    }

    fn left(until: Instant) -> Duration {
        until.saturating_duration_since(Instant::now())
    }

    #[tokio::test]
    async fn a_valid_token_is_remembered_until_its_exp_and_five_minutes_at_most() {
        let v = validator();
        let (long, short) = (token(3600), token(20));
        v.validate(&long).await.unwrap();
        v.validate(&short).await.unwrap();
        let (_, long_until) = v.valid.get(&crate::auth::token_key(&long)).unwrap();
        let (_, short_until) = v.valid.get(&crate::auth::token_key(&short)).unwrap();
        assert!(
            left(long_until) <= CACHE_VALID_FOR,
            "{:?}",
            left(long_until)
        );
        assert!(left(long_until) > CACHE_VALID_FOR - Duration::from_secs(10));
        assert!(
            left(short_until) <= Duration::from_secs(20),
            "{:?}",
            left(short_until)
        );
    }

    #[tokio::test]
    async fn a_cached_token_is_refused_once_its_key_leaves_the_set() {
        // Arrange: a validator over a key set that rotates; a token validated (cached).
        let set = Arc::new(Jwks::fixed(jwks()));
        let v = TokenValidator::new(
            "aud",
            vec![Scheme {
                name: "upstream",
                issuer: ISSUER.into(),
                jwks: set.clone(),
            }],
        );
        let t = token(3600);
        v.validate(&t).await.unwrap();
        let mut next = jwks().keys[0].clone();
        next.common.key_id = Some("next".into());
        let both = jsonwebtoken::jwk::JwkSet {
            keys: vec![jwks().keys[0].clone(), next.clone()],
        };
        let mut replaced = jwks();
        if let jsonwebtoken::jwk::AlgorithmParameters::RSA(rsa) = &mut replaced.keys[0].algorithm {
            // Another modulus: one digit of the key's changed.
            let flipped = if rsa.n.as_bytes()[10] == b'A' {
                "B"
            } else {
                "A"
            };
            rsa.n.replace_range(10..11, flipped);
        }

        // Act: a key rotated in beside it; then the token's key removed; then put back; then
        // another key published under the token's kid.
        set.replace(both);
        let beside = v.validate(&t).await;
        set.replace(jsonwebtoken::jwk::JwkSet { keys: vec![next] });
        let removed = v.validate(&t).await;
        let forgotten = v.valid.get(&crate::auth::token_key(&t)).is_none();
        set.replace(jwks());
        let back = v.validate(&t).await;
        set.replace(replaced);
        let other_key = v.validate(&t).await;

        // Assert
        assert!(beside.is_ok(), "{beside:?}");
        assert_eq!(
            removed.unwrap_err(),
            format!(
                "no signing key with kid {:?}",
                jwks().keys[0].common.key_id.clone().unwrap()
            )
        );
        assert!(forgotten, "the cache no longer holds it");
        assert!(back.is_ok(), "{back:?}");
        assert!(
            other_key.is_err(),
            "a kid re-used for another key: {other_key:?}"
        );
    }

    #[tokio::test]
    async fn a_refused_token_is_remembered_but_not_one_with_an_unknown_kid() {
        let v = validator();
        let expired = token(-3600);
        let reason = v.validate(&expired).await.unwrap_err();
        let (cached, until) = v.refused.get(&crate::auth::token_key(&expired)).unwrap();
        assert_eq!(cached, reason);
        assert!(left(until) > CACHE_INVALID_FOR - Duration::from_secs(10));
        assert!(
            v.validate(&expired).await.is_err(),
            "still refused from the cache"
        );

        let good = token(3600);
        let mut parts: Vec<String> = good.split('.').map(str::to_string).collect();
        parts[0] = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(br#"{"alg":"RS256","typ":"JWT","kid":"rotated-in-later"}"#);
        let unknown_kid = parts.join(".");
        let reason = v.validate(&unknown_kid).await.unwrap_err();
        assert!(reason.starts_with("no signing key"), "{reason}");
        assert!(
            v.refused
                .get(&crate::auth::token_key(&unknown_kid))
                .is_none(),
            "a rotation may bring the key: not remembered"
        );
    }

    #[tokio::test]
    async fn refused_tokens_never_evict_valid_ones() {
        let v = validator();
        let good = token(3600);
        v.validate(&good).await.unwrap();
        // More distinct refused tokens than either map holds (unknown issuers).
        for i in 0..CACHE_MAX + 10 {
            let bad = format!(
                "eyJhbGciOiJSUzI1NiJ9.{}.x",
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .encode(format!(r#"{{"iss":"https://other{i}"}}"#))
            );
            assert!(v.validate(&bad).await.is_err());
        }
        assert!(v.valid.get(&crate::auth::token_key(&good)).is_some());
    }

    #[tokio::test]
    async fn a_token_signed_for_another_algorithm_than_its_key_is_refused() {
        // The key is published for RS256; the same RSA key signs a PS256 token.
        let kid = jwks().keys[0].common.key_id.clone();
        let mut header = Header::new(Algorithm::PS256);
        header.kid = kid;
        let claims = json!({"iss": ISSUER, "aud": "aud", "email": "a@b.c", "exp": now() + 300});
        let pss = jsonwebtoken::encode(
            &header,
            &claims,
            &EncodingKey::from_rsa_pem(KEY_PEM.as_bytes()).unwrap(),
        )
        .unwrap();
        let reason = validator().validate(&pss).await.unwrap_err();
        assert_eq!(reason, "the key is for RS256, the token says PS256");
    }

    #[tokio::test]
    async fn the_default_leeway_is_thirty_seconds() {
        let v = validator();
        assert!(
            v.validate(&token(-20)).await.is_ok(),
            "20 s late: within the leeway"
        );
        let late = v.validate(&token(-45)).await.unwrap_err();
        assert!(late.contains("xpired"), "{late}");
        let strict = validator().with_leeway(Duration::ZERO);
        assert!(strict.validate(&token(-20)).await.is_err());
    }
}
