//! The distribution API as a host reads it from a registry it does not trust: the token
//! exchange (a challenge's realm must be `https://`, or a loopback origin the operator lists
//! for plain HTTP, before any credential is sent there), a tag's digest (checked to be a
//! digest before it names anything), manifests and blobs read chunk by chunk and cut off at
//! their cap while they stream, error bodies capped and cleaned. Redirects are followed only
//! to `https://` (or back to the same loopback registry), at most [`MAX_REDIRECTS`] times, and
//! never with the registry's credentials to another origin.

use oci_client::secrets::RegistryAuth;
use oci_client::Reference;
use reqwest::header::{HeaderMap, ACCEPT, CONTENT_LENGTH, WWW_AUTHENTICATE};
use reqwest::{Response, StatusCode};

use super::options::{OciError, RegistryOptions};
use crate::references::is_loopback;
use crate::references::{clean, Digest};

/// The most of an error body a host reads.
pub const MAX_ERROR_BYTES: usize = 4 * 1024;
/// The largest token answer a host reads.
pub const MAX_TOKEN_BYTES: usize = 64 * 1024;
/// How many redirects one request follows.
pub const MAX_REDIRECTS: usize = 5;
/// The manifest media types a tag is resolved with (as a registry client asks for them).
const RESOLVE_ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, \
     application/vnd.oci.image.index.v1+json, \
     application/vnd.docker.distribution.manifest.v2+json, \
     application/vnd.docker.distribution.manifest.list.v2+json";

/// What the credentials are wanted for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// Reading a repository.
    Pull,
    /// Writing one (and reading it back).
    Push,
}

/// A client for the registries `options` names.
pub struct Wire {
    http: reqwest::Client,
    plain_http: Vec<String>,
}

/// An error about `reference` from what the registry answered.
fn registry(reference: &str, why: impl Into<String>) -> OciError {
    OciError::Registry {
        reference: reference.to_string(),
        why: why.into(),
    }
}

/// A refusal of what the registry sent for `reference`.
fn refused(reference: &str, why: impl Into<String>) -> OciError {
    OciError::Artifact {
        reference: reference.to_string(),
        why: why.into(),
    }
}

impl Wire {
    /// A client with `options`' extra TLS roots and plain-HTTP loopback registries.
    pub fn new(options: &RegistryOptions) -> Result<Wire, OciError> {
        for r in &options.plain_http {
            if !is_loopback(r) {
                return Err(OciError::PlainHttp(r.clone()));
            }
        }
        let plain_http = options.plain_http.clone();
        let allowed = plain_http.clone();
        let redirects = reqwest::redirect::Policy::custom(move |attempt| {
            let url = attempt.url().clone();
            let origin = format!(
                "{}:{}",
                url.host_str().unwrap_or(""),
                url.port().unwrap_or(0)
            );
            let plain_ok = url.scheme() == "http"
                && allowed
                    .iter()
                    .any(|r| r == &origin || r == url.host_str().unwrap_or(""));
            if attempt.previous().len() >= MAX_REDIRECTS {
                attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
            } else if url.scheme() == "https" || plain_ok {
                attempt.follow()
            } else {
                attempt.error(format!(
                    "a redirect to {}, which is neither https:// nor this loopback registry",
                    clean(url.as_str())
                ))
            }
        });
        let mut builder = reqwest::Client::builder()
            .redirect(redirects)
            .connect_timeout(std::time::Duration::from_secs(10))
            .read_timeout(std::time::Duration::from_secs(60))
            .use_rustls_tls();
        if let Some(path) = &options.ca_file {
            let pem = std::fs::read(path).map_err(|e| OciError::CaFile {
                path: path.clone(),
                why: e.to_string(),
            })?;
            let certs =
                reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| OciError::CaFile {
                    path: path.clone(),
                    why: e.to_string(),
                })?;
            if certs.is_empty() {
                return Err(OciError::CaFile {
                    path: path.clone(),
                    why: "holds no PEM certificate".into(),
                });
            }
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        let http = builder.build().map_err(|e| OciError::Io {
            path: "registry client".into(),
            why: e.to_string(),
        })?;
        Ok(Wire { http, plain_http })
    }

    /// `http://registry` for a plain-HTTP loopback registry, else `https://registry`.
    fn origin(&self, registry: &str) -> String {
        let scheme = if self.plain_http.iter().any(|r| r == registry) {
            "http"
        } else {
            "https"
        };
        format!("{scheme}://{registry}")
    }

    /// The credentials to send `target`'s registry for `operation`: a bearer token from the
    /// realm its challenge names when it asks for one (the realm checked first), else
    /// `credentials` themselves (sent to the registry only).
    pub async fn authorize(
        &self,
        reference: &str,
        target: &Reference,
        operation: Operation,
        credentials: RegistryAuth,
    ) -> Result<RegistryAuth, OciError> {
        if let RegistryAuth::Bearer(_) = credentials {
            return Ok(credentials);
        }
        let registry_host = target.resolve_registry();
        let url = format!("{}/v2/", self.origin(registry_host));
        let answer = self
            .http
            .get(&url)
            .send()
            .await
            .map_err(|e| registry(reference, clean(&e.to_string())))?;
        if answer.status() != StatusCode::UNAUTHORIZED {
            return Ok(credentials);
        }
        let Some(challenge) = answer
            .headers()
            .get(WWW_AUTHENTICATE)
            .and_then(|h| h.to_str().ok())
            .and_then(bearer_challenge)
        else {
            return Ok(credentials);
        };
        let realm = self.checked_realm(reference, &challenge.realm)?;
        let scope = match operation {
            Operation::Pull => format!("repository:{}:pull", target.repository()),
            Operation::Push => format!("repository:{}:pull,push", target.repository()),
        };
        let mut query = vec![("scope", scope)];
        if let Some(service) = challenge.service {
            query.push(("service", service));
        }
        let mut request = self.http.get(realm).query(&query);
        if let RegistryAuth::Basic(user, password) = &credentials {
            request = request.basic_auth(user, Some(password));
        }
        let answer = request
            .send()
            .await
            .map_err(|e| registry(reference, format!("token: {}", clean(&e.to_string()))))?;
        if !answer.status().is_success() {
            return Err(error_of(reference, "token", answer).await);
        }
        let body = read_capped(answer, MAX_TOKEN_BYTES)
            .await
            .map_err(|why| registry(reference, format!("token: {why}")))?;
        #[derive(serde::Deserialize)]
        struct Token {
            token: Option<String>,
            access_token: Option<String>,
        }
        let token: Token = serde_json::from_slice(&body).map_err(|_| {
            registry(
                reference,
                "token: the answer is not a JSON token (token or access_token)",
            )
        })?;
        match token.token.or(token.access_token).filter(|t| !t.is_empty()) {
            Some(t) => Ok(RegistryAuth::Bearer(t)),
            None => Err(registry(reference, "token: the answer names no token")),
        }
    }

    /// The realm a challenge names, if credentials may go there: `https://`, or plain HTTP to
    /// a loopback origin listed in `LOANHOST_REGISTRY_PLAIN_HTTP`.
    fn checked_realm(&self, reference: &str, realm: &str) -> Result<url::Url, OciError> {
        let refuse = |why: &str| {
            refused(
                reference,
                format!(
                    "the registry's token realm `{}` {why}: credentials go only to an https:// \
                     realm, or over plain http to a loopback origin listed in \
                     LOANHOST_REGISTRY_PLAIN_HTTP",
                    clean(realm)
                ),
            )
        };
        let url = url::Url::parse(realm).map_err(|_| refuse("is not a URL"))?;
        if !url.username().is_empty() || url.password().is_some() {
            return Err(refuse("carries user information"));
        }
        match url.scheme() {
            "https" => Ok(url),
            "http" => {
                let host = match url.host() {
                    Some(url::Host::Ipv6(ip)) => format!("[{ip}]"),
                    Some(h) => h.to_string(),
                    None => return Err(refuse("names no host")),
                };
                let origin = match url.port() {
                    Some(p) => format!("{host}:{p}"),
                    None => host,
                };
                // Only to a loopback origin the operator lists for plain HTTP: the registry
                // itself, or a token service beside it.
                let listed = self.plain_http.contains(&origin) && is_loopback(&origin);
                if listed {
                    Ok(url)
                } else {
                    Err(refuse(
                        "is plain http:// to an origin not listed in LOANHOST_REGISTRY_PLAIN_HTTP",
                    ))
                }
            }
            _ => Err(refuse("is not http(s)")),
        }
    }

    /// The digest `target`'s tag names now: the registry's `Docker-Content-Digest` for a
    /// `HEAD` of the manifest (checked to be a digest), else the SHA-256 of the manifest read
    /// whole (within `cap`).
    pub async fn resolve(
        &self,
        reference: &str,
        target: &Reference,
        auth: &RegistryAuth,
        cap: usize,
    ) -> Result<Digest, OciError> {
        let url = self.manifest_url(target);
        let answer = with_auth(self.http.head(&url), auth)
            .header(ACCEPT, RESOLVE_ACCEPT)
            .send()
            .await
            .map_err(|e| registry(reference, clean(&e.to_string())))?;
        if !answer.status().is_success() {
            return Err(registry(
                reference,
                format!("the registry answered {} for the tag", answer.status()),
            ));
        }
        match header_digest(reference, answer.headers())? {
            Some(d) => Ok(d),
            None => Ok(self
                .manifest(reference, target, auth, cap, RESOLVE_ACCEPT)
                .await?
                .1),
        }
    }

    /// `target`'s manifest, read within `cap` bytes as it streams, and its digest (the
    /// SHA-256 of the bytes; a `Docker-Content-Digest` that says otherwise is refused).
    pub async fn manifest(
        &self,
        reference: &str,
        target: &Reference,
        auth: &RegistryAuth,
        cap: usize,
        accept: &str,
    ) -> Result<(Vec<u8>, Digest), OciError> {
        let url = self.manifest_url(target);
        let answer = with_auth(self.http.get(&url), auth)
            .header(ACCEPT, accept)
            .send()
            .await
            .map_err(|e| registry(reference, clean(&e.to_string())))?;
        if !answer.status().is_success() {
            return Err(error_of(reference, "manifest", answer).await);
        }
        let named = header_digest(reference, answer.headers())?;
        let bytes = read_capped(answer, cap)
            .await
            .map_err(|why| refused(reference, format!("the manifest: {why}")))?;
        let actual = Digest::of(&bytes);
        if let Some(named) = named.filter(|n| *n != actual) {
            return Err(refused(
                reference,
                format!("the manifest's bytes have the digest {actual}, not {named}"),
            ));
        }
        Ok((bytes, actual))
    }

    /// The blob `digest` of `target`'s repository, read within `cap` bytes as it streams.
    pub async fn blob(
        &self,
        reference: &str,
        target: &Reference,
        auth: &RegistryAuth,
        digest: &str,
        cap: usize,
    ) -> Result<Vec<u8>, OciError> {
        let url = format!(
            "{}/v2/{}/blobs/{digest}",
            self.origin(target.resolve_registry()),
            target.repository()
        );
        let answer = with_auth(self.http.get(&url), auth)
            .send()
            .await
            .map_err(|e| registry(reference, clean(&e.to_string())))?;
        if !answer.status().is_success() {
            return Err(error_of(reference, "blob", answer).await);
        }
        read_capped(answer, cap)
            .await
            .map_err(|why| refused(reference, why))
    }

    fn manifest_url(&self, target: &Reference) -> String {
        let which = target
            .digest()
            .or(target.tag())
            .unwrap_or("latest")
            .to_string();
        format!(
            "{}/v2/{}/manifests/{which}",
            self.origin(target.resolve_registry()),
            target.repository()
        )
    }
}

/// `request` with `auth`'s header.
fn with_auth(request: reqwest::RequestBuilder, auth: &RegistryAuth) -> reqwest::RequestBuilder {
    match auth {
        RegistryAuth::Anonymous => request,
        RegistryAuth::Basic(user, password) => request.basic_auth(user, Some(password)),
        RegistryAuth::Bearer(token) => request.bearer_auth(token),
    }
}

/// The `Docker-Content-Digest` header, checked, if the registry sent one.
fn header_digest(reference: &str, headers: &HeaderMap) -> Result<Option<Digest>, OciError> {
    let Some(value) = headers.get("docker-content-digest") else {
        return Ok(None);
    };
    let text = String::from_utf8_lossy(value.as_bytes());
    Digest::parse(text.trim_end())
        .map(Some)
        .map_err(|why| OciError::Digest {
            reference: reference.to_string(),
            why: format!("the registry's Docker-Content-Digest: {why}"),
        })
}

/// The body of `answer`, at most `cap` bytes: refused unread when its length says more, and
/// as soon as more arrives otherwise.
async fn read_capped(mut answer: Response, cap: usize) -> Result<Vec<u8>, String> {
    let declared = answer
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(n) = declared.filter(|&n| n > cap as u64) {
        return Err(format!("{n} bytes, over its cap of {cap}"));
    }
    let mut bytes = Vec::with_capacity(declared.unwrap_or(0).min(cap as u64) as usize);
    while let Some(chunk) = answer
        .chunk()
        .await
        .map_err(|e| format!("reading it: {}", clean(&e.to_string())))?
    {
        if bytes.len() + chunk.len() > cap {
            return Err(format!("more than its cap of {cap} bytes"));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// What a registry that did not answer 2xx said: its status and the start of its body,
/// cleaned.
async fn error_of(reference: &str, what: &str, answer: Response) -> OciError {
    let status = answer.status();
    let mut body = Vec::new();
    let mut answer = answer;
    while let Ok(Some(chunk)) = answer.chunk().await {
        let room = MAX_ERROR_BYTES - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= MAX_ERROR_BYTES {
            break;
        }
    }
    let text = String::from_utf8_lossy(&body);
    let text = text.trim();
    registry(
        reference,
        if text.is_empty() {
            format!("{what}: the registry answered {status}")
        } else {
            format!("{what}: the registry answered {status}: {}", clean(text))
        },
    )
}

/// A `Bearer` challenge's realm and service.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Challenge {
    pub realm: String,
    pub service: Option<String>,
}

/// Parses `Bearer realm="…",service="…",scope="…"` (RFC 6750 §3); `None` for another scheme
/// or a challenge without a realm.
pub(super) fn bearer_challenge(header: &str) -> Option<Challenge> {
    let (scheme, rest) = header.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let mut params = std::collections::BTreeMap::new();
    let mut chars = rest.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        if key.is_empty() {
            break;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '"' => break,
                    c => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.peek().copied() {
                if c == ',' {
                    break;
                }
                value.push(c);
                chars.next();
            }
        }
        params.insert(key.trim().to_ascii_lowercase(), value.trim().to_string());
    }
    Some(Challenge {
        realm: params.remove("realm").filter(|r| !r.is_empty())?,
        service: params.remove("service"),
    })
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
