//! The dev IdP's RSA signing key: generated once, kept as PKCS#1 PEM in a file (mode 0600) so
//! the server and `loanhost token` sign with the same key, and published as a JWKS.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use jsonwebtoken::jwk::{
    AlgorithmParameters, CommonParameters, Jwk, JwkSet, KeyAlgorithm, PublicKeyUse,
    RSAKeyParameters, RSAKeyType,
};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rsa::pkcs1::{DecodeRsaPrivateKey, EncodeRsaPrivateKey, LineEnding};
use rsa::traits::PublicKeyParts;
use rsa::RsaPrivateKey;
use sha2::{Digest, Sha256};

/// An RSA key that signs RS256 tokens.
#[derive(Clone)]
pub struct SigningKey {
    encoding: EncodingKey,
    jwk: Jwk,
    kid: String,
}

impl SigningKey {
    /// Loads the key at `path`, generating and saving a new 2048-bit key (mode 0600) when it
    /// is missing; hosts started together over one cache folder all get the one key written
    /// ([`crate::secret_file`]).
    pub fn load_or_create(path: &Path) -> anyhow::Result<SigningKey> {
        let pem = crate::secret_file::read_or_create(path, || {
            let key =
                RsaPrivateKey::new(&mut rand::thread_rng(), 2048).map_err(std::io::Error::other)?;
            let pem = key
                .to_pkcs1_pem(LineEnding::LF)
                .map_err(std::io::Error::other)?;
            Ok(pem.as_bytes().to_vec())
        })
        .map_err(|e| anyhow::anyhow!("reading or creating {}: {e}", path.display()))?;
        let pem = String::from_utf8(pem)
            .map_err(|_| anyhow::anyhow!("{}: not a PEM file (not UTF-8)", path.display()))?;
        SigningKey::from_pem(&pem).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    }

    /// A key from PKCS#1 PEM text.
    pub fn from_pem(pem: &str) -> anyhow::Result<SigningKey> {
        let key = RsaPrivateKey::from_pkcs1_pem(pem)?;
        let b64 = |b: Vec<u8>| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
        let n = key.n().to_bytes_be();
        let kid = hex::encode(&Sha256::digest(&n)[..8]);
        let jwk = Jwk {
            common: CommonParameters {
                public_key_use: Some(PublicKeyUse::Signature),
                key_algorithm: Some(KeyAlgorithm::RS256),
                key_id: Some(kid.clone()),
                ..Default::default()
            },
            algorithm: AlgorithmParameters::RSA(RSAKeyParameters {
                key_type: RSAKeyType::RSA,
                n: b64(n),
                e: b64(key.e().to_bytes_be()),
            }),
        };
        Ok(SigningKey {
            encoding: EncodingKey::from_rsa_pem(pem.as_bytes())?,
            jwk,
            kid,
        })
    }

    /// The public key set.
    pub fn jwks(&self) -> JwkSet {
        JwkSet {
            keys: vec![self.jwk.clone()],
        }
    }

    /// Signs an access token.
    pub fn mint(
        &self,
        issuer: &str,
        email: &str,
        audience: &str,
        scope: &str,
        ttl: Duration,
    ) -> Result<String, String> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_err(|e| e.to_string())?
            .as_secs();
        let claims = serde_json::json!({
            "iss": issuer,
            "sub": format!("dev-idp|{}", email.to_lowercase()),
            "aud": audience,
            "email": email,
            "scope": scope,
            "iat": now,
            "nbf": now,
            "exp": now + ttl.as_secs().max(1),
        });
        self.sign(&claims)
    }

    /// Signs arbitrary claims with this key (RS256, with its `kid`).
    pub fn sign(&self, claims: &serde_json::Value) -> Result<String, String> {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).map_err(|e| e.to_string())
    }
}
