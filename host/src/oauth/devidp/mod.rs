//! The embedded development identity provider (`LOANHOST_DEV_IDP=true`): an OIDC-style
//! provider under `{base_url}/dev-idp` with an RSA key of its own, a JWKS, the
//! authorization-code flow with PKCE S256 and a pick-a-demo-user page, refresh tokens and one
//! pre-registered client. Its tokens carry `aud = {mcp_audience}` and the email claim, so the
//! server validates them exactly as it validates a real IdP's. Never for production.

mod guard;
mod key;
mod routes;
mod state;

pub use key::SigningKey;
pub use routes::router;
pub use state::{DevIdp, CLIENT_ID, CLIENT_SECRET};
