//! Sign-in through Microsoft Entra ID as the facade's upstream (`LOANHOST_IDP_PROFILE=entra`),
//! against the certified OpenID Provider of `openid_provider.rs` set up as Entra ID v2 behaves
//! for an API (`OP_MODE=entra` in tests/clients/oidc_op.mjs): one tenant's issuer, `resource`
//! refused, the API named by its scope `api://<application id>/.default`, access tokens whose
//! `aud` is the application id and whose email is in `preferred_username` or `upn`. Through the
//! official Python SDK (sign-in, a call, a refresh through `/token`, a call with the refreshed
//! token) and the official TypeScript SDK; and the same OP refusing the `oidc` profile's
//! `resource`, so these tests can fail.

use crate::openid_provider::{
    assert_asked_by_scope_alone, assert_called_after_the_ops_pages, assert_refreshed,
    assert_refused_for_its_resource, assert_through_the_callback_with_a_refresh_token,
    header_and_claims, setup_op, sign_in, ts_sign_in, Setup,
};

/// The API's application id, and its App ID URI (loanhost's audience).
const APP_ID: &str = "4f1c0a7e-5b2d-4c3e-9a8f-0123456789ab";
const APP_ID_URI: &str = "api://4f1c0a7e-5b2d-4c3e-9a8f-0123456789ab";

/// loanhost with `profile` in front of the OP as Entra, its access tokens' email in `claim`.
async fn entra(profile: &str, claim: &str) -> Setup {
    setup_op(
        profile,
        &[("LOANHOST_MCP_AUDIENCE", APP_ID_URI.to_string())],
        &[
            ("OP_MODE", "entra".to_string()),
            ("OP_TOKEN_AUDIENCE", APP_ID.to_string()),
            ("OP_EMAIL_CLAIM", claim.to_string()),
        ],
    )
    .await
}

#[tokio::test]
async fn an_agent_signs_in_through_entra_with_the_python_sdk_and_refreshes() {
    // Arrange
    let s = entra("entra", "preferred_username").await;

    // Act
    let out = sign_in(&s, "Agent@Example.com", "basic", false).await;

    // Assert: the facade named the API by its scope, sent no resource, audience or prompt.
    assert_called_after_the_ops_pages(&out);
    let q = &out["idpQuery"];
    assert_eq!(
        q["scope"],
        format!("offline_access {APP_ID_URI}/.default"),
        "{q}"
    );
    assert_asked_by_scope_alone(q, &s);
    // The token is Entra's shape: the tenant's issuer, the application id, no `email`.
    let (_, claims) = header_and_claims(out["accessToken"].as_str().unwrap());
    assert_eq!(claims["iss"], s.issuer.as_str());
    assert!(s
        .issuer
        .ends_with(&format!("/{}/v2.0", crate::openid_provider::ENTRA_TENANT)));
    assert_eq!(claims["aud"], APP_ID);
    assert_eq!(claims["preferred_username"], "Agent@Example.com");
    assert!(claims.get("email").is_none(), "{claims}");
    // A refresh through /token (the SDK's form names `resource` only at the code exchange,
    // which Entra would refuse): a new token that works.
    assert_refreshed(&out);
}

#[tokio::test]
async fn an_admin_signs_in_through_entra_with_the_typescript_sdk_by_upn() {
    // Arrange
    let s = entra("entra", "upn").await;

    // Act
    let out = ts_sign_in(&s, "admin@example.com").await;

    // Assert
    assert_through_the_callback_with_a_refresh_token(&out, &s);
}

#[tokio::test]
async fn the_oidc_profile_is_refused_by_entra_for_its_resource() {
    // Arrange
    let s = entra("oidc", "upn").await;

    // Act
    let out = sign_in(&s, "Agent@Example.com", "basic", false).await;

    // Assert: Entra answers the `resource` the oidc profile sends with AADSTS901002.
    assert_refused_for_its_resource(&out, APP_ID_URI);
}
