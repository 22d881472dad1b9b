//! Authentication: who the caller is. Owns bearer-token extraction, token validation and
//! agent resolution; hands the rest of the host an [`Identity`], never a token.

mod identity;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;

use axum::http::HeaderMap;

pub use identity::{Identity, RoleCode, NAME_READER_ROLES};

/// Why a request is not authenticated. Every case answers the same `401` challenge; the
/// reason is only logged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// No `Authorization` header.
    #[error("no bearer token")]
    Missing,
    /// A header that is not `Bearer <token>`.
    #[error("malformed Authorization header")]
    Malformed,
    /// The token failed validation.
    #[error("invalid token: {0}")]
    InvalidToken(String),
    /// A valid token whose email matches no platform agent.
    #[error("no platform agent for the token's email")]
    UnknownAgent,
    /// The agent directory could not be read.
    #[error("agent directory unavailable: {0}")]
    Unavailable(String),
}

/// A boxed future, for object-safe async traits.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Turns request headers into a caller identity.
pub trait Authenticator: Send + Sync {
    /// Authenticates the request from its headers.
    fn authenticate<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Result<Identity, AuthError>>;
}

/// Extracts the token of an `Authorization: Bearer <token>` header.
pub fn bearer_token(headers: &HeaderMap) -> Result<&str, AuthError> {
    let mut values = headers.get_all(axum::http::header::AUTHORIZATION).iter();
    let value = values.next().ok_or(AuthError::Missing)?;
    if values.next().is_some() {
        return Err(AuthError::Malformed);
    }
    let value = value.to_str().map_err(|_| AuthError::Malformed)?;
    let (scheme, token) = value.split_once(' ').ok_or(AuthError::Malformed)?;
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() || token.contains(' ') {
        return Err(AuthError::Malformed);
    }
    Ok(token)
}

/// An authenticator with a fixed table of opaque bearer strings, for tests and embedding.
/// It is never built from configuration: a server started from the command line always
/// validates real tokens.
#[derive(Debug, Default, Clone)]
pub struct StaticTokens {
    tokens: HashMap<String, Identity>,
}

impl StaticTokens {
    /// Adds a token for an identity.
    pub fn with(mut self, token: impl Into<String>, identity: Identity) -> Self {
        self.tokens.insert(token.into(), identity);
        self
    }
}

impl Authenticator for StaticTokens {
    fn authenticate<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Result<Identity, AuthError>> {
        Box::pin(async move {
            let token = bearer_token(headers)?;
            self.tokens
                .get(token)
                .cloned()
                .ok_or_else(|| AuthError::InvalidToken("unknown static token".into()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("authorization", HeaderValue::from_str(v).unwrap());
        h
    }

    #[test]
    fn bearer_extraction() {
        assert_eq!(bearer_token(&headers("Bearer abc")), Ok("abc"));
        assert_eq!(bearer_token(&headers("bearer abc")), Ok("abc"));
        assert_eq!(bearer_token(&headers("Basic abc")), Err(AuthError::Malformed));
        assert_eq!(bearer_token(&headers("Bearer")), Err(AuthError::Malformed));
        assert_eq!(bearer_token(&headers("Bearer a b")), Err(AuthError::Malformed));
        assert_eq!(bearer_token(&HeaderMap::new()), Err(AuthError::Missing));
    }
}

/// The authenticator a server started from configuration uses.
pub async fn from_config(_config: &crate::config::Config) -> anyhow::Result<std::sync::Arc<dyn Authenticator>> {
    anyhow::bail!("token validation is not built yet (issue: MCP transport, OAuth facade and token validation)")
}
