//! Tests of the OAuth facade's rewrites.
use super::rewrite_authorize;
use crate::config::IdpProfile;

const AUD: &str = "https://loanhost.local/mcp";

#[test]
fn rewrites_audience_resource_and_scope() {
    let q = "response_type=code&client_id=c&redirect_uri=http%3A%2F%2Fx%2Fcb&state=s&code_challenge=abc&code_challenge_method=S256&resource=http%3A%2F%2Fme&audience=evil&scope=openid%20email";
    let out = rewrite_authorize(q, AUD).unwrap();
    assert_eq!(
        out,
        "response_type=code&client_id=c&redirect_uri=http%3A%2F%2Fx%2Fcb&state=s&code_challenge=abc&code_challenge_method=S256&scope=openid+email+offline_access&audience=https%3A%2F%2Floanhost.local%2Fmcp"
    );
}

#[test]
fn passes_only_the_six_parameters_and_the_rewritten_ones() {
    let q = "response_type=code&client_id=c&code_challenge=a&code_challenge_method=S256&state=s&redirect_uri=http%3A%2F%2Fx%2Fcb&request=eyJ&request_uri=urn%3Ax&response_mode=form_post&prompt=none&nonce=n&login_hint=ceo%40x";
    let out = rewrite_authorize(q, AUD).unwrap();
    let names: Vec<String> = url::form_urlencoded::parse(out.as_bytes())
        .map(|(k, _)| k.into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "response_type",
            "client_id",
            "code_challenge",
            "code_challenge_method",
            "state",
            "redirect_uri",
            "scope",
            "audience"
        ]
    );
}

#[test]
fn adds_scope_when_absent_and_keeps_offline_access_once() {
    let base = "response_type=code&client_id=c&code_challenge=a&code_challenge_method=S256";
    assert!(rewrite_authorize(base, AUD)
        .unwrap()
        .contains("&scope=offline_access&audience="));
    let with = format!("{base}&scope=offline_access");
    assert_eq!(
        rewrite_authorize(&with, AUD)
            .unwrap()
            .matches("offline_access")
            .count(),
        1
    );
}

#[test]
fn a_standard_openid_provider_gets_the_audience_as_resource_and_prompt_consent() {
    // Arrange: a client that names its own resource and asks no scope.
    let q = "response_type=code&client_id=c&redirect_uri=http%3A%2F%2Fx%2Fcb&state=s&code_challenge=abc&code_challenge_method=S256&resource=http%3A%2F%2Fme&audience=evil";
    // Act
    let oidc = super::rewrite_authorize_with(q, AUD, IdpProfile::Oidc, None).unwrap();
    let auth0 = super::rewrite_authorize_with(q, AUD, IdpProfile::Auth0, None).unwrap();
    // Assert
    assert_eq!(
        oidc,
        "response_type=code&client_id=c&redirect_uri=http%3A%2F%2Fx%2Fcb&state=s&code_challenge=abc&code_challenge_method=S256&scope=offline_access&resource=https%3A%2F%2Floanhost.local%2Fmcp&prompt=consent"
    );
    assert_eq!(auth0, rewrite_authorize(q, AUD).unwrap());
    assert!(auth0.ends_with("&scope=offline_access&audience=https%3A%2F%2Floanhost.local%2Fmcp"));
}

#[test]
fn the_token_requests_resource_becomes_the_audience() {
    let body =
        b"grant_type=authorization_code&code=c&resource=http%3A%2F%2F127.0.0.1%3A8080&resource=x";
    assert_eq!(
        super::rewrite_token_resource(body, AUD).unwrap(),
        "grant_type=authorization_code&code=c&resource=https%3A%2F%2Floanhost.local%2Fmcp"
    );
    assert_eq!(
        super::rewrite_token_resource(b"grant_type=refresh_token&refresh_token=r", AUD),
        None
    );
}

#[test]
fn refuses_plain_pkce_missing_pkce_and_other_response_types() {
    let e = rewrite_authorize(
        "response_type=code&client_id=c&code_challenge=a&code_challenge_method=plain",
        AUD,
    )
    .unwrap_err();
    assert_eq!(
        e.1,
        "code_challenge_method `plain` is not supported; use S256"
    );
    let e = rewrite_authorize("response_type=code&client_id=c", AUD).unwrap_err();
    assert_eq!(e.1, "PKCE is required: code_challenge is missing");
    let e = rewrite_authorize(
        "response_type=token&client_id=c&code_challenge=a&code_challenge_method=S256",
        AUD,
    )
    .unwrap_err();
    assert_eq!(e.0, "unsupported_response_type");
}

#[test]
fn through_the_callback_the_idp_sees_the_callback_and_a_sealed_state() {
    use super::super::keys::{CallbackKey, Pending};
    let key = CallbackKey::from_bytes(&[3u8; 32]);
    let listed = vec![crate::config::AllowedRedirect::parse(
        "c=https://app.example/cb",
    )];
    let through = super::Callback {
        key: &key,
        url: "https://lh.example/authorize/callback".into(),
        listed: &listed,
        expires: 5000,
        browser: Some("binding".into()),
    };
    let q = "response_type=code&client_id=c&redirect_uri=https%3A%2F%2Fapp.example%2Fcb&state=s1&code_challenge=abc&code_challenge_method=S256";
    let out = super::rewrite_authorize_through(q, AUD, Some(&through)).unwrap();
    let pairs: std::collections::BTreeMap<String, String> =
        url::form_urlencoded::parse(out.as_bytes())
            .into_owned()
            .collect();
    assert_eq!(
        pairs["redirect_uri"],
        "https://lh.example/authorize/callback"
    );
    assert_eq!(
        key.open(&pairs["state"], 5000).unwrap(),
        Pending {
            redirect_uri: "https://app.example/cb".into(),
            state: Some("s1".into()),
            expires: 5000,
            browser: Some("binding".into()),
        }
    );
    assert_eq!(pairs["client_id"], "c");
    assert_eq!(pairs["audience"], AUD);
    // Without the callback, the same query passes through as the spec says.
    let plain = rewrite_authorize(q, AUD).unwrap();
    assert!(plain.contains("redirect_uri=https%3A%2F%2Fapp.example%2Fcb&state=s1"));
    // The facade refuses what the IdP would no longer check, and a missing redirect URI.
    for (bad, why) in [
        ("https%3A%2F%2Fevil.example%2Fcb", "is not allowed"),
        ("", "redirect_uri is required"),
    ] {
        let q = format!("response_type=code&client_id=c&redirect_uri={bad}&code_challenge=abc&code_challenge_method=S256");
        let (error, description) =
            super::rewrite_authorize_through(&q, AUD, Some(&through)).unwrap_err();
        assert_eq!(error, "invalid_request");
        assert!(description.contains(why), "{description}");
    }
}

#[test]
fn entra_gets_the_apis_default_scope_and_no_resource_at_authorize() {
    // Arrange: a client asking OpenID scopes and one of its own, naming its resource.
    const API: &str = "api://4f1c0a7e-5b2d-4c3e-9a8f-0123456789ab";
    let q = "response_type=code&client_id=c&redirect_uri=http%3A%2F%2Fx%2Fcb&state=s&code_challenge=abc&code_challenge_method=S256&resource=http%3A%2F%2Fme&audience=evil&scope=openid%20loans%3Aread%20email";
    let bare = "response_type=code&client_id=c&code_challenge=abc&code_challenge_method=S256";
    // Act
    let entra = super::rewrite_authorize_with(q, API, IdpProfile::Entra, None).unwrap();
    let without_scope = super::rewrite_authorize_with(bare, API, IdpProfile::Entra, None).unwrap();
    // Assert
    assert_eq!(
        entra,
        "response_type=code&client_id=c&redirect_uri=http%3A%2F%2Fx%2Fcb&state=s&code_challenge=abc&code_challenge_method=S256&scope=openid+email+offline_access+api%3A%2F%2F4f1c0a7e-5b2d-4c3e-9a8f-0123456789ab%2F.default"
    );
    assert!(
        without_scope.ends_with(
            "&scope=offline_access+api%3A%2F%2F4f1c0a7e-5b2d-4c3e-9a8f-0123456789ab%2F.default"
        ),
        "{without_scope}"
    );
}

#[test]
fn entra_gets_the_apis_default_scope_and_no_resource_at_token() {
    let code = b"grant_type=authorization_code&code=c&resource=http%3A%2F%2F127.0.0.1%3A8080&code_verifier=v";
    assert_eq!(
        super::rewrite_token_scoped(code, "api://loanhost/", IdpProfile::Entra),
        "grant_type=authorization_code&code=c&code_verifier=v&scope=offline_access+api%3A%2F%2Floanhost%2F.default"
    );
    let refresh = b"grant_type=refresh_token&refresh_token=r&scope=openid+mcp&audience=x";
    assert_eq!(
        super::rewrite_token_scoped(refresh, "api://loanhost", IdpProfile::Entra),
        "grant_type=refresh_token&refresh_token=r&scope=openid+offline_access+api%3A%2F%2Floanhost%2F.default"
    );
}

#[test]
fn okta_gets_the_clients_openid_scopes_and_no_resource_audience_or_prompt_at_authorize() {
    // Arrange: a client asking OpenID scopes and one the authorization server does not define.
    let q = "response_type=code&client_id=c&redirect_uri=http%3A%2F%2Fx%2Fcb&state=s&code_challenge=abc&code_challenge_method=S256&resource=http%3A%2F%2Fme&audience=evil&scope=openid%20loans%3Aread%20email";
    let bare = "response_type=code&client_id=c&code_challenge=abc&code_challenge_method=S256";
    // Act
    let okta = super::rewrite_authorize_with(q, AUD, IdpProfile::Okta, None).unwrap();
    let without_scope = super::rewrite_authorize_with(bare, AUD, IdpProfile::Okta, None).unwrap();
    // Assert
    assert_eq!(
        okta,
        "response_type=code&client_id=c&redirect_uri=http%3A%2F%2Fx%2Fcb&state=s&code_challenge=abc&code_challenge_method=S256&scope=openid+email+offline_access"
    );
    assert_eq!(
        without_scope,
        "response_type=code&client_id=c&code_challenge=abc&code_challenge_method=S256&scope=offline_access"
    );
}

#[test]
fn okta_gets_no_resource_or_audience_at_token_and_a_scope_only_when_asked() {
    let code = b"grant_type=authorization_code&code=c&resource=http%3A%2F%2F127.0.0.1%3A8080&code_verifier=v";
    assert_eq!(
        super::rewrite_token_scoped(code, AUD, IdpProfile::Okta),
        "grant_type=authorization_code&code=c&code_verifier=v"
    );
    let refresh = b"grant_type=refresh_token&refresh_token=r&scope=openid+mcp&audience=x";
    assert_eq!(
        super::rewrite_token_scoped(refresh, AUD, IdpProfile::Okta),
        "grant_type=refresh_token&refresh_token=r&scope=openid+offline_access"
    );
}
