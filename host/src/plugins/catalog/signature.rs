//! Plugin signatures: minisign `.minisig` files verified against the operator's trusted
//! public keys (`LOANHOST_TRUSTED_KEYS`).

use std::sync::Arc;

use minisign_verify::{PublicKey, Signature};

/// How signatures are enforced.
#[derive(Clone, Default)]
pub struct SignaturePolicy {
    /// Refuse plugins without a valid signature by a trusted key.
    pub required: bool,
    keys: Arc<Vec<(String, PublicKey)>>,
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
                let key = parsed.map_err(|e| format!("`{k}` is not a minisign public key: {e}"))?;
                let line = k.lines().last().unwrap_or(k).trim();
                Ok::<_, String>((key_id(line).unwrap_or_default(), key))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SignaturePolicy {
            required,
            keys: Arc::new(keys),
        })
    }

    /// Checks `wasm` against the text of its signature file (`None` when absent).
    /// Returns whether the plugin is signed by a trusted key.
    pub fn check(
        &self,
        wasm: &[u8],
        sig_name: &str,
        signature: Option<&str>,
    ) -> Result<bool, SignatureError> {
        self.signer(wasm, sig_name, signature).map(|s| s.is_some())
    }

    /// As [`SignaturePolicy::check`], naming the key id (as `minisign` prints it) of the trusted
    /// key that verified the signature.
    ///
    /// A present signature is always checked when keys are configured, even when
    /// signatures are not required: a bad signature means a tampered file.
    pub fn signer(
        &self,
        wasm: &[u8],
        sig_name: &str,
        signature: Option<&str>,
    ) -> Result<Option<String>, SignatureError> {
        let Some(text) = signature else {
            return if self.required {
                Err(SignatureError::Missing(sig_name.to_string()))
            } else {
                Ok(None)
            };
        };
        if self.keys.is_empty() {
            return if self.required {
                Err(SignatureError::NoKeys)
            } else {
                Ok(None)
            };
        }
        let sig =
            Signature::decode(text).map_err(|_| SignatureError::Malformed(sig_name.to_string()))?;
        match self
            .keys
            .iter()
            .find(|(_, k)| k.verify(wasm, &sig, false).is_ok())
        {
            Some((id, _)) => Ok(Some(id.clone())),
            None => Err(SignatureError::Invalid(sig_name.to_string())),
        }
    }
}

/// The trusted comment of a signature (signed with it: `minisign` verifies it too), or empty.
pub fn trusted_comment(text: &str) -> String {
    Signature::decode(text)
        .map(|s| s.trusted_comment().to_string())
        .unwrap_or_default()
}

/// What a manifest's signature says it was signed with: the trusted comment
/// `loanhost-plugin component=sha256:<hex> [view=sha256:<hex>]` that `loanhost plugin sign`
/// writes for a manifest, naming the component and the view beside it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ManifestBinding {
    /// The component's SHA-256 (hex).
    pub component: Option<String>,
    /// The view's SHA-256 (hex), when there was one.
    pub view: Option<String>,
}

/// The trusted comment's first word for a manifest's signature.
pub const MANIFEST_COMMENT: &str = "loanhost-plugin";

impl ManifestBinding {
    /// Reads a trusted comment (anything else binds nothing).
    pub fn parse(comment: &str) -> ManifestBinding {
        let mut words = comment.split_whitespace();
        let mut out = ManifestBinding::default();
        if words.next() != Some(MANIFEST_COMMENT) {
            return out;
        }
        for word in words {
            match word.split_once("=sha256:") {
                Some(("component", d)) => out.component = Some(d.to_ascii_lowercase()),
                Some(("view", d)) => out.view = Some(d.to_ascii_lowercase()),
                _ => {}
            }
        }
        out
    }

    /// The binding of a manifest to this component and view.
    pub fn of(wasm: &[u8], view: Option<&[u8]>) -> ManifestBinding {
        use sha2::Digest as _;
        let digest = |b: &[u8]| hex::encode(sha2::Sha256::digest(b));
        ManifestBinding {
            component: Some(digest(wasm)),
            view: view.map(digest),
        }
    }

    /// The trusted comment that binds a manifest to these digests.
    pub fn comment(&self) -> String {
        let mut c = MANIFEST_COMMENT.to_string();
        if let Some(d) = &self.component {
            c.push_str(&format!(" component=sha256:{d}"));
        }
        if let Some(d) = &self.view {
            c.push_str(&format!(" view=sha256:{d}"));
        }
        c
    }
}

/// The key id of a base64 minisign public key (`Ed`, 8 bytes of id, 32 of key), as upper-case
/// hex the way `minisign` prints it.
fn key_id(base64_key: &str) -> Option<String> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(base64_key)
        .ok()?;
    let id: [u8; 8] = bytes.get(2..10)?.try_into().ok()?;
    Some(format!("{:016X}", u64::from_le_bytes(id)))
}

#[cfg(test)]
mod key_id_tests {
    #[test]
    fn key_ids_read_as_minisign_prints_them() {
        // minisign's own documentation: this key is `E7620F1842B4E81F`.
        assert_eq!(
            super::key_id("RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3").as_deref(),
            Some("E7620F1842B4E81F")
        );
        assert_eq!(super::key_id("not base64"), None);
    }
}
