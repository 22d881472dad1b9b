//! Signing keys of a token issuer: a JWKS fetched from its URL and cached, or a fixed set
//! (the embedded dev IdP).
//!
//! Refreshes are single-flight and never block on a lock while fetching for requests that
//! have a key: a stale cache keeps serving while one background refresh runs; a token naming
//! an unknown `kid` waits for at most one refresh in flight, and refreshes are spaced by
//! [`MIN_REFRESH_INTERVAL`] (longer, with exponential back-off, after failures), so neither
//! forged `kid`s nor a slow IdP can set the IdP's request rate or stall sign-ins.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, JwkSet};

/// Refreshes for unknown `kid`s happen at most this often.
pub const MIN_REFRESH_INTERVAL: Duration = Duration::from_secs(10);
/// Keys are refreshed in the background after this long.
pub const MAX_AGE: Duration = Duration::from_secs(3600);
/// Longest wait between attempts after repeated failures.
pub const MAX_BACKOFF: Duration = Duration::from_secs(300);
/// How long one fetch may take.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// Where keys come from.
enum Source {
    Url {
        url: String,
        client: reqwest::Client,
    },
    Fixed,
}

#[derive(Clone)]
struct Cached {
    keys: Arc<JwkSet>,
    /// Keys of the last set this host cannot verify with: (kid, why), for the refusal's
    /// reason.
    skipped: Arc<Vec<(String, String)>>,
    fetched: Option<Instant>,
    last_attempt: Option<Instant>,
    failures: u32,
}

impl Cached {
    /// Whether another fetch may start now.
    fn may_attempt(&self, now: Instant) -> bool {
        let Some(last) = self.last_attempt else {
            return true;
        };
        let wait = if self.failures == 0 {
            MIN_REFRESH_INTERVAL
        } else {
            // 1 s, 2 s, 4 s … up to MAX_BACKOFF.
            Duration::from_secs(1u64 << self.failures.min(9).saturating_sub(1)).min(MAX_BACKOFF)
        };
        now.saturating_duration_since(last) >= wait
    }
}

/// A cached JWKS.
pub struct Jwks {
    source: Source,
    cache: RwLock<Cached>,
    /// Held by the one fetch in flight; waiters re-check the cache after it.
    fetching: tokio::sync::Mutex<()>,
    /// Set while a background refresh task runs.
    background: AtomicBool,
}

impl Jwks {
    /// Keys fetched from `url` on first use.
    pub fn from_url(url: impl Into<String>) -> Jwks {
        let client = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .build()
            .expect("an HTTP client with default TLS");
        Self::with_source(
            Source::Url {
                url: url.into(),
                client,
            },
            JwkSet { keys: vec![] },
            None,
        )
    }

    /// A fixed key set.
    pub fn fixed(keys: JwkSet) -> Jwks {
        Self::with_source(Source::Fixed, keys, Some(Instant::now()))
    }

    fn with_source(source: Source, keys: JwkSet, fetched: Option<Instant>) -> Jwks {
        Jwks {
            source,
            cache: RwLock::new(Cached {
                keys: Arc::new(keys),
                skipped: Arc::default(),
                fetched,
                last_attempt: None,
                failures: 0,
            }),
            fetching: tokio::sync::Mutex::new(()),
            background: AtomicBool::new(false),
        }
    }

    fn snapshot(&self) -> Cached {
        self.cache.read().expect("jwks cache lock").clone()
    }

    /// The key for `kid` (or the only key when the token names none). A stale set keeps
    /// answering while it is refreshed in the background; an unknown `kid` waits for one
    /// refresh when the back-off allows one, and fails at once otherwise.
    pub async fn key(self: &Arc<Self>, kid: Option<&str>) -> Result<Jwk, String> {
        let now = Instant::now();
        let cached = self.snapshot();
        if let Some(k) = find(&cached.keys, kid) {
            let stale = cached.fetched.is_none_or(|t| t.elapsed() > MAX_AGE);
            if stale && cached.may_attempt(now) {
                self.refresh_in_background();
            }
            return Ok(k);
        }
        if matches!(self.source, Source::Url { .. }) {
            if cached.may_attempt(now) {
                self.refresh_once(now).await;
            } else if self.fetching.try_lock().is_err() {
                // A fetch is in flight (a cold cache, a rotation): its answer is ours too.
                drop(self.fetching.lock().await);
            }
        }
        let cached = self.snapshot();
        find(&cached.keys, kid).ok_or_else(|| match kid {
            Some(k) => match cached.skipped.iter().find(|(id, _)| id == k) {
                Some((_, why)) => format!(
                    "the token's kid {k:?} names a key of the issuer's set that this host skipped ({why})"
                ),
                None => format!("no signing key with kid {k:?}"),
            },
            None => "the token has no kid and the issuer has more than one key".to_string(),
        })
    }

    /// Whether the set as last fetched still holds `key` under `kid` (as [`Jwks::key`] would
    /// find it): a token validated with a key the issuer has since removed is not accepted
    /// from the validation cache. Reads memory only.
    pub fn holds(&self, kid: Option<&str>, key: &Jwk) -> bool {
        let cache = self.cache.read().expect("jwks cache lock");
        let found = match kid {
            Some(kid) => cache.keys.find(kid),
            None if cache.keys.keys.len() == 1 => cache.keys.keys.first(),
            None => None,
        };
        found == Some(key)
    }

    /// Replaces the set (a fixed set's rotation in tests).
    #[cfg(test)]
    pub fn replace(&self, keys: JwkSet) {
        let mut cache = self.cache.write().expect("jwks cache lock");
        cache.keys = Arc::new(keys);
        cache.fetched = Some(Instant::now());
    }

    fn refresh_in_background(self: &Arc<Self>) {
        if self.background.swap(true, Ordering::AcqRel) {
            return;
        }
        let this = self.clone();
        tokio::spawn(async move {
            this.refresh_once(Instant::now()).await;
            this.background.store(false, Ordering::Release);
        });
    }

    /// Fetches the set unless another fetch began at or after `asked` (then its result is
    /// the answer): at most one fetch runs at a time.
    async fn refresh_once(&self, asked: Instant) {
        let Source::Url { url, client } = &self.source else {
            return;
        };
        let _one = self.fetching.lock().await;
        {
            let cached = self.snapshot();
            if cached.last_attempt.is_some_and(|t| t >= asked)
                || !cached.may_attempt(Instant::now())
            {
                return;
            }
        }
        self.cache.write().expect("jwks cache lock").last_attempt = Some(Instant::now());
        let result = fetch(client, url).await;
        let mut cache = self.cache.write().expect("jwks cache lock");
        FETCHES[usize::from(result.is_err())].fetch_add(1, Ordering::Relaxed);
        match result {
            Ok((keys, skipped)) => {
                for (kid, why) in &skipped {
                    if !cache.skipped.iter().any(|(k, w)| k == kid && w == why) {
                        tracing::warn!(url = ?url, kid = ?kid, reason = %why, "skipping a key of the issuer's JWKS that this host cannot verify with; its other keys are used");
                    }
                }
                cache.keys = Arc::new(keys);
                cache.skipped = Arc::new(skipped);
                cache.fetched = Some(Instant::now());
                cache.failures = 0;
            }
            Err(e) => {
                cache.failures = cache.failures.saturating_add(1);
                tracing::warn!(url = ?url, error = ?e, failures = cache.failures, "cannot fetch JWKS; keeping the keys we have");
            }
        }
    }
}

/// JWKS fetches in this process: `[succeeded, failed]`.
static FETCHES: [std::sync::atomic::AtomicU64; 2] = [
    std::sync::atomic::AtomicU64::new(0),
    std::sync::atomic::AtomicU64::new(0),
];

/// JWKS fetches made by this process so far: (succeeded, failed).
pub fn fetch_counts() -> (u64, u64) {
    (
        FETCHES[0].load(Ordering::Relaxed),
        FETCHES[1].load(Ordering::Relaxed),
    )
}

fn find(set: &JwkSet, kid: Option<&str>) -> Option<Jwk> {
    match kid {
        Some(kid) => set.find(kid).cloned(),
        None if set.keys.len() == 1 => set.keys.first().cloned(),
        None => None,
    }
}

async fn fetch(
    client: &reqwest::Client,
    url: &str,
) -> Result<(JwkSet, Vec<(String, String)>), String> {
    let resp = client.get(url).send().await.map_err(|e| e.to_string())?;
    if !resp.status().is_success() {
        return Err(format!("HTTP {}", resp.status()));
    }
    let body = resp.bytes().await.map_err(|e| e.to_string())?;
    parse_set(&body)
}

/// A JWKS document: its keys this host can verify signatures with, and the others (kid, why)
/// skipped. RFC 7517 §5: keys (and members) that are not understood are ignored, so a set
/// with a new algorithm's key beside the old ones (an IdP's rotation) keeps working.
pub fn parse_set(body: &[u8]) -> Result<(JwkSet, Vec<(String, String)>), String> {
    let doc: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("not a JWKS: {e}"))?;
    let keys = doc
        .get("keys")
        .and_then(serde_json::Value::as_array)
        .ok_or("not a JWKS: no `keys` array")?;
    let (mut usable, mut skipped) = (Vec::new(), Vec::new());
    for key in keys {
        let kid = key
            .get("kid")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
            .to_string();
        match usable_for_signatures(key) {
            Ok(jwk) => usable.push(jwk),
            Err(why) => skipped.push((kid, why)),
        }
    }
    Ok((JwkSet { keys: usable }, skipped))
}

/// The key as one this host verifies signatures with, or why not: only signing keys (`use`
/// absent or `sig`, `key_ops` absent or holding `verify`) of RSA, EC P-256 or P-384, or OKP Ed25519, whose `alg`, when named, is
/// one of those.
fn usable_for_signatures(key: &serde_json::Value) -> Result<Jwk, String> {
    let text = |k: &str| key.get(k).and_then(serde_json::Value::as_str);
    if let Some(u) = text("use").filter(|u| *u != "sig") {
        return Err(format!("use {u:?}: not a signing key"));
    }
    if let Some(ops) = key.get("key_ops").and_then(serde_json::Value::as_array) {
        if !ops.iter().any(|o| o == "verify") {
            return Err("key_ops without \"verify\": not a signing key".into());
        }
    }
    match (text("kty"), text("crv")) {
        (Some("RSA"), _)
        | (Some("EC"), Some("P-256" | "P-384"))
        | (Some("OKP"), Some("Ed25519")) => {}
        (Some(kty), crv) => {
            return Err(format!(
                "key type {kty:?}{} is not supported",
                crv.map(|c| format!(" on curve {c:?}")).unwrap_or_default()
            ))
        }
        (None, _) => return Err("no `kty`".into()),
    }
    if let Some(alg) = text("alg") {
        let known = [
            "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
        ];
        if !known.contains(&alg) {
            return Err(format!("algorithm {alg:?} is not supported"));
        }
    }
    serde_json::from_value::<Jwk>(key.clone()).map_err(|e| format!("not a usable JWK: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_this_host_cannot_verify_with_are_skipped_and_named_the_rest_used() {
        // Arrange: an RSA signing key beside P-521, Ed448, X25519, an encryption-only RSA key,
        // a symmetric key and an unknown type.
        let rsa = serde_json::json!({"kty": "RSA", "kid": "rs256-sig", "use": "sig", "alg": "RS256", "n": "sXch", "e": "AQAB"});
        let doc = serde_json::json!({"keys": [
            rsa,
            {"kty": "EC", "kid": "p521", "crv": "P-521", "alg": "ES512", "x": "AQ", "y": "AQ"},
            {"kty": "OKP", "kid": "x25519", "crv": "X25519", "x": "AQ"},
            {"kty": "OKP", "kid": "ed448", "crv": "Ed448", "x": "AQ"},
            {"kty": "RSA", "kid": "rsa-enc", "use": "enc", "alg": "RSA-OAEP", "n": "sXch", "e": "AQAB"},
            {"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"},
            {"kty": "PQ", "kid": "future"},
            {"kty": "EC", "kid": "p256", "crv": "P-256", "x": "MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4", "y": "4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM", "extra": {"ignored": true}}
        ]});

        // Act
        let (set, skipped) = parse_set(doc.to_string().as_bytes()).unwrap();

        // Assert
        let kids: Vec<_> = set
            .keys
            .iter()
            .filter_map(|k| k.common.key_id.clone())
            .collect();
        assert_eq!(kids, ["rs256-sig", "p256"]);
        let why = |kid: &str| skipped.iter().find(|(k, _)| k == kid).unwrap().1.clone();
        assert!(why("p521").contains("\"P-521\""), "{skipped:?}");
        assert!(why("x25519").contains("X25519"));
        assert!(why("ed448").contains("Ed448"));
        assert!(why("rsa-enc").contains("not a signing key"));
        assert!(why("hmac").contains("\"oct\""));
        assert!(why("future").contains("\"PQ\""));
        assert!(parse_set(b"[]").unwrap_err().contains("no `keys` array"));
    }

    #[tokio::test]
    async fn a_token_naming_a_skipped_key_is_refused_with_that_reason() {
        let keys = Jwks::fixed(JwkSet { keys: vec![] });
        keys.cache.write().unwrap().skipped = Arc::new(vec![(
            "p521".into(),
            "key type \"EC\" on curve \"P-521\" is not supported".into(),
        )]);
        let keys = Arc::new(keys);
        let e = keys.key(Some("p521")).await.unwrap_err();
        assert!(
            e.contains("names a key of the issuer's set that this host skipped"),
            "{e}"
        );
        assert_eq!(
            keys.key(Some("other")).await.unwrap_err(),
            "no signing key with kid \"other\""
        );
    }

    #[test]
    fn back_off_grows_after_failures() {
        let now = Instant::now();
        let mut c = Cached {
            skipped: Arc::default(),
            keys: Arc::new(JwkSet { keys: vec![] }),
            fetched: None,
            last_attempt: None,
            failures: 0,
        };
        assert!(c.may_attempt(now), "first fetch at once");
        c.last_attempt = Some(now);
        assert!(!c.may_attempt(now + Duration::from_secs(9)));
        assert!(c.may_attempt(now + MIN_REFRESH_INTERVAL));
        c.failures = 1;
        assert!(c.may_attempt(now + Duration::from_secs(1)));
        c.failures = 4;
        assert!(!c.may_attempt(now + Duration::from_secs(7)));
        assert!(c.may_attempt(now + Duration::from_secs(8)));
        c.failures = 30;
        assert!(!c.may_attempt(now + Duration::from_secs(255)));
        assert!(c.may_attempt(now + MAX_BACKOFF));
    }
}
