//! What every registry operation shares: its options, a reference parsed, the registry's
//! credentials, the upload client, and the errors.

use std::path::{Path, PathBuf};

use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};

pub use crate::config::RegistryOptions;
use crate::references::{self, is_loopback};

/// Why a registry operation failed. Messages name the reference and the file or layer at
/// fault, never a credential.
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    /// The reference is not `oci://registry/repository[:tag][@sha256:…]`.
    #[error("`{0}` is not an OCI reference like oci://registry.example.com/team/report_loans:1.0")]
    Reference(String),
    /// The registry auth file cannot be read or parsed.
    #[error("registry auth file {path}: {why}")]
    AuthFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// The CA file cannot be read or holds no certificate.
    #[error("registry CA file {path}: {why}")]
    CaFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// A plain-HTTP registry that is not on a loopback address.
    #[error("{0}: plain http:// is allowed only for a registry on a loopback address")]
    PlainHttp(String),
    /// The registry refused or failed the request.
    #[error("{reference}: {why}")]
    Registry {
        /// The reference.
        reference: String,
        /// The registry's answer.
        why: String,
    },
    /// The registry named something that is not a digest (`sha256:` and 64 lower-case hex
    /// digits): refused before it names anything.
    #[error("{reference}: {why}")]
    Digest {
        /// The reference.
        reference: String,
        /// What was wrong, the registry's text cleaned.
        why: String,
    },
    /// The artifact is not a loanhost plugin, or a layer breaks a rule.
    #[error("{reference}: {why}")]
    Artifact {
        /// The reference.
        reference: String,
        /// The rule broken.
        why: String,
    },
    /// Reading or writing local files.
    #[error("{path}: {why}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        why: String,
    },
}

/// Parses `oci://registry/repository[:tag][@sha256:…]` ([`references::parse_reference`]).
pub fn parse_reference(text: &str) -> Result<Reference, OciError> {
    references::parse_reference(text).map_err(|bad| OciError::Reference(bad.0))
}

/// A client for `options`.
pub fn client(options: &RegistryOptions) -> Result<Client, OciError> {
    for registry in &options.plain_http {
        if !is_loopback(registry) {
            return Err(OciError::PlainHttp(registry.clone()));
        }
    }
    let mut extra_root_certificates = Vec::new();
    if let Some(path) = &options.ca_file {
        let data = std::fs::read(path).map_err(|e| OciError::CaFile {
            path: path.clone(),
            why: e.to_string(),
        })?;
        if !String::from_utf8_lossy(&data).contains("-----BEGIN CERTIFICATE-----") {
            return Err(OciError::CaFile {
                path: path.clone(),
                why: "holds no PEM certificate".into(),
            });
        }
        extra_root_certificates.push(Certificate {
            encoding: CertificateEncoding::Pem,
            data,
        });
    }
    // rustls on ring, the provider the rest of the host's TLS uses (once per process; a
    // provider already installed stays).
    let _ = rustls::crypto::ring::default_provider().install_default();
    Ok(Client::new(ClientConfig {
        protocol: ClientProtocol::HttpsExcept(options.plain_http.clone()),
        extra_root_certificates,
        read_timeout: Some(std::time::Duration::from_secs(60)),
        connect_timeout: Some(std::time::Duration::from_secs(10)),
        ..Default::default()
    }))
}

/// The credentials for `registry` from the auth file (anonymous when there is none, or it
/// names no entry for the registry).
pub fn auth_for(registry: &str, options: &RegistryOptions) -> Result<RegistryAuth, OciError> {
    let Some(path) = auth_file(options) else {
        return Ok(RegistryAuth::Anonymous);
    };
    let bad = |why: String| OciError::AuthFile {
        path: path.clone(),
        why,
    };
    let text = std::fs::read_to_string(&path).map_err(|e| bad(e.to_string()))?;
    let file: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let auths = file.get("auths").and_then(|a| a.as_object());
    let Some(entry) = auths.and_then(|a| {
        a.iter()
            .find(|(k, _)| {
                let k = k
                    .trim_start_matches("https://")
                    .trim_start_matches("http://");
                k.trim_end_matches('/') == registry
            })
            .map(|(_, v)| v)
    }) else {
        return Ok(RegistryAuth::Anonymous);
    };
    if let Some(encoded) = entry.get("auth").and_then(|a| a.as_str()) {
        use base64::Engine as _;
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .map_err(|_| {
                bad(format!(
                    "the entry for {registry} has an `auth` that is not base64"
                ))
            })?;
        let decoded = String::from_utf8(decoded)
            .map_err(|_| bad(format!("the entry for {registry} is not UTF-8")))?;
        let (user, password) = decoded.split_once(':').ok_or_else(|| {
            bad(format!(
                "the entry for {registry} has an `auth` that is not user:password"
            ))
        })?;
        return Ok(RegistryAuth::Basic(user.to_string(), password.to_string()));
    }
    match (
        entry.get("username").and_then(|u| u.as_str()),
        entry.get("password").and_then(|p| p.as_str()),
    ) {
        (Some(user), Some(password)) => Ok(RegistryAuth::Basic(user.into(), password.into())),
        _ => match entry.get("registrytoken").and_then(|t| t.as_str()) {
            Some(token) => Ok(RegistryAuth::Bearer(token.to_string())),
            None => Err(bad(format!(
                "the entry for {registry} has neither `auth`, `username`/`password` nor `registrytoken`"
            ))),
        },
    }
}

/// The auth file in force: the configured one, else the first of the ecosystem's defaults
/// that exists.
fn auth_file(options: &RegistryOptions) -> Option<PathBuf> {
    if let Some(path) = &options.auth_file {
        return Some(path.clone());
    }
    let env = |k: &str| std::env::var_os(k).map(PathBuf::from);
    [
        env("REGISTRY_AUTH_FILE"),
        env("XDG_RUNTIME_DIR").map(|d| d.join("containers/auth.json")),
        env("HOME").map(|h| h.join(".docker/config.json")),
    ]
    .into_iter()
    .flatten()
    .find(|p| Path::new(p).is_file())
}
