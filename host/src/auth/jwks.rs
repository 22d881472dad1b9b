//! Signing keys of a token issuer: a JWKS fetched from its URL and cached, refreshed when a
//! token names an unknown `kid` (at most once per [`MIN_REFRESH_INTERVAL`]), or a fixed set
//! (the embedded dev IdP).

use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, JwkSet};
use tokio::sync::Mutex;

/// Unknown-`kid` refreshes happen at most this often, so forged `kid`s cannot make the
/// server hammer the IdP.
pub const MIN_REFRESH_INTERVAL: Duration = Duration::from_secs(10);
/// Keys are refetched after this long even without an unknown `kid`.
pub const MAX_AGE: Duration = Duration::from_secs(3600);

/// Where keys come from.
enum Source {
    Url {
        url: String,
        client: reqwest::Client,
    },
    Fixed,
}

struct Cached {
    keys: JwkSet,
    fetched: Option<Instant>,
    last_attempt: Option<Instant>,
}

/// A cached JWKS.
pub struct Jwks {
    source: Source,
    cache: Mutex<Cached>,
}

impl Jwks {
    /// Keys fetched from `url` on first use.
    pub fn from_url(url: impl Into<String>) -> Jwks {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .expect("an HTTP client with default TLS");
        Jwks {
            source: Source::Url {
                url: url.into(),
                client,
            },
            cache: Mutex::new(Cached {
                keys: JwkSet { keys: vec![] },
                fetched: None,
                last_attempt: None,
            }),
        }
    }

    /// A fixed key set.
    pub fn fixed(keys: JwkSet) -> Jwks {
        Jwks {
            source: Source::Fixed,
            cache: Mutex::new(Cached {
                keys,
                fetched: Some(Instant::now()),
                last_attempt: None,
            }),
        }
    }

    /// The key for `kid` (or the only key when the token names none), refreshing once when
    /// it is unknown and the rate limit allows.
    pub async fn key(&self, kid: Option<&str>) -> Result<Jwk, String> {
        let mut cache = self.cache.lock().await;
        let stale = cache.fetched.is_none_or(|t| t.elapsed() > MAX_AGE);
        if let Some(k) = find(&cache.keys, kid).filter(|_| !stale) {
            return Ok(k);
        }
        if let Source::Url { url, client } = &self.source {
            let may_refresh = cache
                .last_attempt
                .is_none_or(|t| t.elapsed() >= MIN_REFRESH_INTERVAL)
                || stale;
            if may_refresh {
                cache.last_attempt = Some(Instant::now());
                match fetch(client, url).await {
                    Ok(keys) => {
                        cache.keys = keys;
                        cache.fetched = Some(Instant::now());
                    }
                    Err(e) => tracing::warn!(%url, error = %e, "cannot fetch JWKS"),
                }
            }
        }
        find(&cache.keys, kid).ok_or_else(|| match kid {
            Some(k) => format!("no signing key with kid `{k}`"),
            None => "the token has no kid and the issuer has more than one key".to_string(),
        })
    }
}

fn find(set: &JwkSet, kid: Option<&str>) -> Option<Jwk> {
    match kid {
        Some(kid) => set.find(kid).cloned(),
        None if set.keys.len() == 1 => set.keys.first().cloned(),
        None => None,
    }
}

async fn fetch(client: &reqwest::Client, url: &str) -> Result<JwkSet, String> {
    let resp = client.get(url).send().await.map_err(|e| e.to_string())?;
    if !resp.status().is_success() {
        return Err(format!("HTTP {}", resp.status()));
    }
    resp.json::<JwkSet>()
        .await
        .map_err(|e| format!("not a JWKS: {e}"))
}
