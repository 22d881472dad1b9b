//! Sign-in through an Okta custom authorization server as the facade's upstream
//! (`LOANHOST_IDP_PROFILE=okta`), against the certified OpenID Provider of
//! `openid_provider.rs` set up as Okta behaves (`OP_MODE=okta` in tests/clients/oidc_op.mjs):
//! the authorization server's issuer (`/oauth2/default`) and routes (`/v1/authorize`,
//! `/v1/token`, `/v1/keys`), a scope it does not define refused, `resource` refused, access
//! tokens with its own audience and Okta's claims beside the `email` claim an operator adds.
//! Through the official Python SDK (sign-in, a call, a refresh through `/token`, a call with
//! the refreshed token) and the official TypeScript SDK; and the same server refusing the
//! `oidc` profile's `resource`, so these tests can fail.

use crate::openid_provider::{
    assert_asked_by_scope_alone, assert_called_after_the_ops_pages, assert_refreshed,
    assert_refused_for_its_resource, assert_through_the_callback_with_a_refresh_token,
    header_and_claims, setup_op, sign_in, ts_sign_in, Setup,
};

/// The authorization server's audience, as an Okta administrator names an API's.
const AUDIENCE: &str = "api://loanhost";

/// loanhost with `profile` in front of the OP as an Okta custom authorization server.
async fn okta(profile: &str) -> Setup {
    setup_op(
        profile,
        &[("LOANHOST_MCP_AUDIENCE", AUDIENCE.to_string())],
        &[("OP_MODE", "okta".to_string())],
    )
    .await
}

#[tokio::test]
async fn an_agent_signs_in_through_okta_with_the_python_sdk_and_refreshes() {
    // Arrange
    let s = okta("okta").await;

    // Act
    let out = sign_in(&s, "Agent@Example.com", "basic", false).await;

    // Assert: the facade asked only scopes Okta defines, and sent no resource, audience or
    // prompt.
    assert_called_after_the_ops_pages(&out);
    let q = &out["idpQuery"];
    assert_eq!(q["scope"], "offline_access", "{q}");
    assert_asked_by_scope_alone(q, &s);
    // The token is Okta's shape: the authorization server's issuer and audience, its claims.
    let (_, claims) = header_and_claims(out["accessToken"].as_str().unwrap());
    assert_eq!(claims["iss"], s.issuer.as_str());
    assert!(s.issuer.ends_with("/oauth2/default"), "{}", s.issuer);
    assert_eq!(claims["aud"], AUDIENCE);
    assert_eq!(claims["email"], "Agent@Example.com");
    assert_eq!(claims["ver"], 1);
    assert!(
        claims["scp"].is_array() && claims["cid"].is_string(),
        "{claims}"
    );
    // A refresh through /token (the SDK's form names `resource` at the code exchange, which
    // the facade drops): a new token that works.
    assert_refreshed(&out);
}

#[tokio::test]
async fn an_admin_signs_in_through_okta_with_the_typescript_sdk() {
    // Arrange
    let s = okta("okta").await;

    // Act
    let out = ts_sign_in(&s, "admin@example.com").await;

    // Assert
    assert_through_the_callback_with_a_refresh_token(&out, &s);
}

#[tokio::test]
async fn the_oidc_profile_is_refused_by_okta_for_its_resource() {
    // Arrange
    let s = okta("oidc").await;

    // Act
    let out = sign_in(&s, "Agent@Example.com", "basic", false).await;

    // Assert
    assert_refused_for_its_resource(&out, AUDIENCE);
}
