//! The facade in front of an independent OAuth server (`oauth2-mock-server` from npm) as the
//! upstream IdP: authorize redirect rewriting, token pass-through, and JWKS validation of the
//! tokens it issues.

use serde_json::Value;

use crate::helpers::{spawn_app_with, AppOptions};

pub struct MockIdp {
    pub issuer: String,
    _child: tokio::process::Child,
}

impl MockIdp {
    /// The settings that make loanhost's facade front this IdP.
    pub fn settings(&self) -> Vec<(&'static str, String)> {
        vec![
            ("LOANHOST_IDP_ISSUER", self.issuer.clone()),
            (
                "LOANHOST_IDP_AUTHORIZE_URL",
                format!("{}/authorize", self.issuer),
            ),
            ("LOANHOST_IDP_TOKEN_URL", format!("{}/token", self.issuer)),
            ("LOANHOST_IDP_JWKS_URL", format!("{}/jwks", self.issuer)),
        ]
    }
}

async fn mock_idp(email: &str) -> MockIdp {
    mock_idp_with(email, 3600).await
}

/// oauth2-mock-server issuing tokens for `email`, adding `iss` to its authorization response
/// when `send_iss` (as Keycloak, Okta and others do).
pub async fn mock_idp_sending(email: &str, send_iss: bool) -> MockIdp {
    mock_idp_options(email, 3600, send_iss).await
}

/// oauth2-mock-server issuing tokens for `email` that live `ttl_secs`.
pub async fn mock_idp_with(email: &str, ttl_secs: u64) -> MockIdp {
    mock_idp_options(email, ttl_secs, false).await
}

async fn mock_idp_options(email: &str, ttl_secs: u64, send_iss: bool) -> MockIdp {
    assert!(
        loanhost_tests::clients()
            .join("node_modules/oauth2-mock-server")
            .is_dir(),
        "run `make test` (npm ci in tests/clients)"
    );
    let env = [
        ("MOCK_EMAIL", email.to_string()),
        ("MOCK_TTL", ttl_secs.to_string()),
        (
            "MOCK_SEND_ISS",
            if send_iss { "1" } else { "0" }.to_string(),
        ),
    ];
    let (child, first) =
        crate::helpers::node_peer(std::path::Path::new("node"), "mock_idp.mjs", &env).await;
    MockIdp {
        issuer: first["issuer"].as_str().unwrap().to_string(),
        _child: child,
    }
}

#[tokio::test]
async fn facade_over_an_independent_oauth_server() {
    // Arrange
    let idp = mock_idp("agent@example.com").await;
    let mut options = AppOptions::default().plugin(
        "get_loan_reporting_metadata",
        crate::helpers::tool_wasm("get_loan_reporting_metadata"),
        crate::helpers::tool_manifest("get_loan_reporting_metadata"),
    );
    options.env.extend(idp.settings());
    let app = spawn_app_with(options).await;
    let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
    let redirect = "http%3A%2F%2F127.0.0.1%3A9%2Fcb";

    // Act: the client's authorize request goes to the facade...
    let to_idp = app
        .client
        .get(format!(
            "{}/authorize?response_type=code&client_id=any-client&redirect_uri={redirect}&state=st&code_challenge={challenge}&code_challenge_method=S256&resource=http%3A%2F%2Fx&scope=openid",
            app.base
        ))
        .send()
        .await
        .unwrap();
    let idp_url = to_idp.headers()["location"].to_str().unwrap().to_string();
    // ...the browser follows to the IdP, which redirects back with a code.
    let back = app.client.get(&idp_url).send().await.unwrap();
    let callback = reqwest::Url::parse(back.headers()["location"].to_str().unwrap()).unwrap();
    let code = callback
        .query_pairs()
        .find(|(k, _)| k == "code")
        .unwrap()
        .1
        .into_owned();
    let token = app
        .client
        .post(format!("{}/token", app.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("grant_type=authorization_code&client_id=any-client&client_secret=s&code={code}&code_verifier={verifier}&redirect_uri={redirect}"))
        .send()
        .await
        .unwrap();
    let token_status = token.status();
    let tokens: Value = token.json().await.unwrap();
    let access = tokens["access_token"]
        .as_str()
        .expect("an access token")
        .to_string();
    let call = app
        .client
        .post(format!("{}/mcp", app.base))
        .bearer_auth(&access)
        .json(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_loan_reporting_metadata", "arguments": {}}}))
        .send()
        .await
        .unwrap();
    let call_status = call.status();
    let reply: Value = call.json().await.unwrap();
    let seen = claims_of(&access)["authorize_request"].clone();
    let wrong_verifier = app
        .client
        .post(format!("{}/token", app.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("grant_type=authorization_code&client_id=any-client&code={code}&code_verifier=wrong&redirect_uri={redirect}"))
        .send()
        .await
        .unwrap();

    // Assert
    assert_eq!(to_idp.status(), 302);
    assert!(
        idp_url.starts_with(&format!("{}/authorize?", idp.issuer)),
        "{idp_url}"
    );
    assert_eq!(back.status(), 302);
    assert_eq!(token_status, 200, "{tokens}");
    assert_eq!(call_status, 200);
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    assert_eq!(seen["audience"], "https://loanhost.local/mcp");
    assert_eq!(seen["resource"], Value::Null);
    assert_eq!(seen["scope"], "openid offline_access");
    assert_eq!(
        wrong_verifier.status(),
        400,
        "the IdP's PKCE refusal passes through"
    );
}

/// The (unverified) payload of a JWT, to read what the mock IdP recorded.
pub fn claims_of(token: &str) -> Value {
    use base64::Engine as _;
    let payload = token.split('.').nth(1).unwrap();
    serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap(),
    )
    .unwrap()
}
