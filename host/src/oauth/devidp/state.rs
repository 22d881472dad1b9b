//! The dev IdP's state: its demo client, its key, the codes and refresh tokens it has issued,
//! and the guard on its password.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::guard;
use super::key::SigningKey;
use crate::data::Db;

/// The pre-registered demo client.
pub const CLIENT_ID: &str = "loanhost-demo";
/// Its secret (`client_secret_post` or `client_secret_basic`).
pub const CLIENT_SECRET: &str = "loanhost-demo-secret";
/// Lifetime of an authorization code.
pub(super) const CODE_TTL: Duration = Duration::from_secs(120);
/// Lifetime of a refresh token.
pub(super) const REFRESH_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// A pending authorization code.
pub(super) struct Grant {
    pub(super) email: String,
    pub(super) client_id: String,
    pub(super) redirect_uri: String,
    pub(super) code_challenge: String,
    pub(super) scope: String,
    pub(super) audience: String,
    pub(super) expires: Instant,
}

/// A live refresh token.
pub(super) struct Refresh {
    pub(super) email: String,
    pub(super) client_id: String,
    pub(super) scope: String,
    pub(super) audience: String,
    pub(super) expires: Instant,
}

/// The provider's state.
pub struct DevIdp {
    /// `{base_url}/dev-idp`: issuer of its tokens.
    pub issuer: String,
    /// The audience its tokens carry when the client asks for none.
    pub audience: String,
    /// Lifetime of access tokens.
    pub token_ttl: Duration,
    /// The password sign-in asks for (`LOANHOST_DEV_IDP_PASSWORD`); `None`: none.
    pub(super) password: Option<crate::config::Password>,
    /// Wrong guesses of it, and the passes right ones earned.
    pub(super) guard: guard::Guard,
    /// Redirect URIs registered for the demo client besides loopback ones: this server's
    /// own callback and `LOANHOST_AUTHORIZE_REDIRECT_URIS`' entries for it.
    pub(super) redirects: Vec<String>,
    pub(super) key: SigningKey,
    pub(super) db: Db,
    pub(super) codes: Mutex<HashMap<String, Grant>>,
    pub(super) refresh: Mutex<HashMap<String, Refresh>>,
}

impl DevIdp {
    /// A provider for `base_url`, signing with `key`, listing agents of `db`.
    pub fn new(
        base_url: &str,
        audience: &str,
        key: SigningKey,
        db: Db,
        token_ttl: Duration,
    ) -> DevIdp {
        DevIdp {
            issuer: format!("{base_url}/dev-idp"),
            audience: audience.to_string(),
            token_ttl,
            password: None,
            guard: guard::Guard::default(),
            redirects: Vec::new(),
            key,
            db,
            codes: Mutex::new(HashMap::new()),
            refresh: Mutex::new(HashMap::new()),
        }
    }

    /// Asks every sign-in for `password` (`None`: any demo user signs in by picking it).
    pub fn with_password(mut self, password: Option<crate::config::Password>) -> DevIdp {
        self.password = password;
        self
    }

    /// Registers `uris` for the demo client, besides loopback ones.
    pub fn with_redirects(mut self, uris: Vec<String>) -> DevIdp {
        self.redirects = uris;
        self
    }

    /// Whether the demo client may be sent back to `uri`: one registered exactly, or an
    /// `http` URI on a loopback address (any port, RFC 8252 §7.3), without user information
    /// or a fragment.
    pub(super) fn redirect_allowed(&self, uri: &str) -> bool {
        if self.redirects.iter().any(|r| r == uri) {
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
        loopback
            && url.scheme() == "http"
            && url.username().is_empty()
            && url.password().is_none()
            && url.fragment().is_none()
    }

    /// The provider's public keys.
    pub fn jwks(&self) -> jsonwebtoken::jwk::JwkSet {
        self.key.jwks()
    }

    /// Mints an access token for `email` (also used by `loanhost token`).
    pub fn mint(&self, email: &str, audience: &str, scope: &str) -> Result<String, String> {
        self.key
            .mint(&self.issuer, email, audience, scope, self.token_ttl)
    }
}

pub(super) fn random_token() -> String {
    use base64::Engine as _;
    use rand::RngCore as _;
    let mut bytes = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}
