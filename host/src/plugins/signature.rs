//! Plugin signatures: minisign `.minisig` files verified against the operator's trusted
//! public keys (`LOANHOST_TRUSTED_KEYS`).

use std::sync::Arc;

use minisign_verify::{PublicKey, Signature};

/// How signatures are enforced.
#[derive(Clone, Default)]
pub struct SignaturePolicy {
    /// Refuse plugins without a valid signature by a trusted key.
    pub required: bool,
    keys: Arc<Vec<PublicKey>>,
}

impl std::fmt::Debug for SignaturePolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignaturePolicy")
            .field("required", &self.required)
            .field("keys", &self.keys.len())
            .finish()
    }
}

/// Why a signature check failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// Required mode and no `.minisig` file.
    #[error("unsigned: signatures are required (LOANHOST_REQUIRE_SIGNED_PLUGINS=true) and there is no {0}")]
    Missing(String),
    /// The `.minisig` file is not a minisign signature.
    #[error("{0}: not a minisign signature")]
    Malformed(String),
    /// No trusted key verifies the signature (tampered file, or an untrusted signer).
    #[error("{0}: the signature does not verify against any trusted key (tampered plugin or untrusted signer)")]
    Invalid(String),
    /// Required mode with no trusted keys configured.
    #[error("signatures are required but LOANHOST_TRUSTED_KEYS names no key")]
    NoKeys,
}

impl SignaturePolicy {
    /// A policy from the configured keys (base64 public keys as `minisign -G` prints them,
    /// or the two-line `.pub` file text).
    pub fn new(required: bool, keys: &[String]) -> Result<SignaturePolicy, String> {
        let keys = keys
            .iter()
            .map(|k| {
                let k = k.trim();
                let parsed = if k.contains('\n') {
                    PublicKey::decode(k)
                } else {
                    PublicKey::from_base64(k)
                };
                parsed.map_err(|e| format!("`{k}` is not a minisign public key: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SignaturePolicy {
            required,
            keys: Arc::new(keys),
        })
    }

    /// Checks `wasm` against the text of its signature file (`None` when absent).
    /// Returns whether the plugin is signed by a trusted key.
    ///
    /// A present signature is always checked when keys are configured, even when
    /// signatures are not required: a bad signature means a tampered file.
    pub fn check(
        &self,
        wasm: &[u8],
        sig_name: &str,
        signature: Option<&str>,
    ) -> Result<bool, SignatureError> {
        let Some(text) = signature else {
            return if self.required {
                Err(SignatureError::Missing(sig_name.to_string()))
            } else {
                Ok(false)
            };
        };
        if self.keys.is_empty() {
            return if self.required {
                Err(SignatureError::NoKeys)
            } else {
                Ok(false)
            };
        }
        let sig =
            Signature::decode(text).map_err(|_| SignatureError::Malformed(sig_name.to_string()))?;
        if self
            .keys
            .iter()
            .any(|k| k.verify(wasm, &sig, false).is_ok())
        {
            Ok(true)
        } else {
            Err(SignatureError::Invalid(sig_name.to_string()))
        }
    }
}
