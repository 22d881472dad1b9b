//! The key of the facade's callback: read from its file, or made once (32 random bytes, mode
//! 0600) and shared by hosts that share the file; it seals a pending sign-in into the `state`
//! the IdP sees (HMAC-SHA-256) and binds the IdP's code to the client's redirect URI
//! (ChaCha20-Poly1305, with a key derived for that purpose alone).

use std::path::Path;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305, NONCE_LEN};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// How long a sign-in may take between `/authorize` and the callback.
pub const PENDING_TTL_SECS: u64 = 600;
/// The prefix of a code the facade issued (the IdP's code, encrypted and bound to the client's
/// redirect URI).
const CODE_PREFIX: &str = "lhc2.";

/// Why a callback's `state` or a bound code was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallbackError {
    /// Not sealed by this key (forged, altered, or another deployment's).
    #[error("the state is not one this server issued")]
    Forged,
    /// Sealed, but the sign-in took longer than [`PENDING_TTL_SECS`].
    #[error("the sign-in took longer than {PENDING_TTL_SECS} s; start it again")]
    Expired,
    /// A code the facade issued presented with another redirect URI than the one it was
    /// sent to, or altered.
    #[error("the code was not issued by this server for this redirect_uri")]
    OtherRedirect,
    /// A code the facade did not issue, while codes go through its callback.
    #[error("the code was not issued through this server's authorization callback")]
    Unbound,
    /// The callback was reached from a browser that did not start the sign-in (or its
    /// cookie expired).
    #[error("this sign-in was started in another browser, or took too long; start it again")]
    OtherBrowser,
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
    /// The SHA-256 (base64url) of the secret in the cookie of the browser that started the
    /// sign-in ([`Pending::cookie_name`]).
    #[serde(rename = "b", default, skip_serializing_if = "Option::is_none")]
    pub browser: Option<String>,
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

    /// The key that encrypts codes: derived from this key for that purpose alone.
    fn code_key(&self) -> LessSafeKey {
        let bytes = self.mac("code-aead-key", &[]).finalize().into_bytes();
        LessSafeKey::new(
            UnboundKey::new(&CHACHA20_POLY1305, &bytes).expect("a 32-byte ChaCha20 key"),
        )
    }

    /// The IdP's `code` as handed to the client: encrypted, with the redirect URI it is sent
    /// to as associated data, so it opens only with that URI and says nothing of the IdP's
    /// code to whoever sees it on the way.
    pub fn bind_code(&self, code: &str, redirect_uri: &str) -> String {
        use rand::RngCore as _;
        let mut nonce = [0u8; NONCE_LEN];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        let mut sealed = code.as_bytes().to_vec();
        self.code_key()
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(redirect_uri.as_bytes()),
                &mut sealed,
            )
            .expect("a code fits ChaCha20-Poly1305");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        format!("{CODE_PREFIX}{}", URL_SAFE_NO_PAD.encode(out))
    }

    /// The IdP's code inside a code the facade issued, opened with the `redirect_uri` the
    /// client presents; a code it did not issue is refused ([`CallbackError::Unbound`]).
    pub fn unbind_code(&self, code: &str, redirect_uri: &str) -> Result<String, CallbackError> {
        let rest = code
            .strip_prefix(CODE_PREFIX)
            .ok_or(CallbackError::Unbound)?;
        let bytes = URL_SAFE_NO_PAD
            .decode(rest)
            .map_err(|_| CallbackError::Forged)?;
        if bytes.len() < NONCE_LEN {
            return Err(CallbackError::Forged);
        }
        let (nonce, sealed) = bytes.split_at(NONCE_LEN);
        let mut sealed = sealed.to_vec();
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| CallbackError::Forged)?;
        let inner = self
            .code_key()
            .open_in_place(nonce, Aad::from(redirect_uri.as_bytes()), &mut sealed)
            .map_err(|_| CallbackError::OtherRedirect)?;
        String::from_utf8(inner.to_vec()).map_err(|_| CallbackError::Forged)
    }
}
