//! RFC 9207 through the facade: IdPs that add `iss` to their authorization response, and the
//! MCP 2026-07-28 clients that compare it with loanhost's issuer (the official Python SDK 2.3
//! and TypeScript SDK v2). Without `LOANHOST_AUTHORIZE_CALLBACK` such an IdP's sign-ins fail in
//! both SDKs; with it, the facade's callback checks the IdP's `iss` and both sign in. An IdP
//! that sends no `iss` works either way. The callback's refusals (a forged state, another
//! issuer, a redirect URI not allowed, a code presented with another redirect URI) are checked
//! over HTTP.

use serde_json::Value;

use crate::helpers::{spawn_app_with, AppOptions, TestApp};
use crate::real_clients::{node_client, python_client};
use crate::upstream_idp::{claims_of, mock_idp_sending, MockIdp};

const REDIRECT: &str = "http://127.0.0.1:9/callback";

/// A server with the metadata tool, fronting `idp` (the embedded dev IdP when `None`), with
/// the facade's callback on or off.
async fn app(idp: Option<&MockIdp>, callback: bool) -> TestApp {
    let mut options = AppOptions::default().plugin(
        "get_loan_reporting_metadata",
        crate::helpers::tool_wasm("get_loan_reporting_metadata"),
        crate::helpers::tool_manifest("get_loan_reporting_metadata"),
    );
    if let Some(idp) = idp {
        options.env.extend(idp.settings());
    }
    if callback {
        options
            .env
            .push(("LOANHOST_AUTHORIZE_CALLBACK", "true".into()));
    }
    spawn_app_with(options).await
}

/// Both SDKs, one after the other, against `base`.
async fn both_sdks(base: &str) -> [(&'static str, Value); 2] {
    [
        (
            "python",
            python_client(&["signin", base, "agent@example.com"]).await,
        ),
        (
            "typescript",
            node_client("ts_oauth_client.mjs", &[base, "agent@example.com"]).await,
        ),
    ]
}

#[tokio::test]
async fn without_the_callback_an_idp_that_sends_iss_fails_every_sdk_sign_in() {
    // Arrange: the spec's pass-through facade in front of an IdP that names itself in `iss`.
    let idp = mock_idp_sending("agent@example.com", true).await;
    let app = app(Some(&idp), false).await;

    for (sdk, result) in both_sdks(&app.base).await {
        // Assert: the redirect reached the client with the IdP's iss, and the SDK refused it
        // before redeeming the code (loanhost's metadata names loanhost as the issuer).
        assert_eq!(result["iss"], idp.issuer.as_str(), "{sdk}: {result}");
        let error = result["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("iss") || error.contains("ssuer"),
            "{sdk} must refuse the IdP's iss: {result}"
        );
        assert!(result.get("isError").is_none(), "{sdk}: {result}");
    }
}

#[tokio::test]
async fn with_the_callback_both_sdks_sign_in_behind_an_idp_that_sends_iss() {
    // Arrange
    let idp = mock_idp_sending("agent@example.com", true).await;
    let app = app(Some(&idp), true).await;

    for (sdk, result) in both_sdks(&app.base).await {
        // Assert: the IdP answered the facade, which passed the code on without the IdP's iss.
        assert_eq!(result["isError"], false, "{sdk}: {result}");
        assert_eq!(
            result["idpRedirectUri"],
            format!("{}/authorize/callback", app.base),
            "{sdk}"
        );
        assert_eq!(result["iss"], Value::Null, "{sdk}: {result}");
        assert_eq!(
            result["callbackParams"],
            serde_json::json!(["code", "state"]),
            "{sdk}"
        );
    }
}

#[tokio::test]
async fn both_sdks_sign_in_behind_idps_without_iss_with_the_callback_on_or_off() {
    // Arrange: oauth2-mock-server without iss, and the embedded dev IdP (which holds the
    // token request to the redirect URI of the authorization request, so the callback's
    // rewrite of it is checked by a real IdP).
    let idp = mock_idp_sending("agent@example.com", false).await;
    for (name, upstream, callback) in [
        ("mock, pass-through", Some(&idp), false),
        ("mock, callback", Some(&idp), true),
        ("dev IdP, pass-through", None, false),
        ("dev IdP, callback", None, true),
    ] {
        let app = app(upstream, callback).await;

        for (sdk, result) in both_sdks(&app.base).await {
            // Assert
            assert_eq!(result["isError"], false, "{name}, {sdk}: {result}");
            assert_eq!(result["iss"], Value::Null, "{name}, {sdk}");
            let expected = if callback {
                format!("{}/authorize/callback", app.base)
            } else {
                REDIRECT.to_string()
            };
            assert_eq!(result["idpRedirectUri"], expected, "{name}, {sdk}");
        }
    }
}

/// The query pairs of a `Location` header.
fn query_of(location: &str) -> std::collections::BTreeMap<String, String> {
    reqwest::Url::parse(location)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect()
}

/// The `name=value` of the sign-in cookie `/authorize` gave the browser.
fn cookie_of(resp: &reqwest::Response) -> String {
    let set = resp.headers()["set-cookie"].to_str().unwrap();
    assert!(set.starts_with("loanhost_signin_"), "{set}");
    set.split(';').next().unwrap().to_string()
}

/// `/authorize` on the facade with `redirect_uri` and `state`; the IdP URL it redirects to.
async fn authorize(app: &TestApp, redirect_uri: &str) -> reqwest::Response {
    authorize_as(app, "any-client", redirect_uri).await
}

/// [`authorize`] for client `client_id`.
async fn authorize_as(app: &TestApp, client_id: &str, redirect_uri: &str) -> reqwest::Response {
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("response_type", "code")
        .append_pair("client_id", client_id)
        .append_pair("redirect_uri", redirect_uri)
        .append_pair("state", "client-state")
        .append_pair(
            "code_challenge",
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        )
        .append_pair("code_challenge_method", "S256")
        .finish();
    app.client
        .get(format!("{}/authorize?{query}", app.base))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn the_callback_passes_a_code_on_bound_to_the_clients_redirect_uri() {
    // Arrange
    let idp = mock_idp_sending("agent@example.com", true).await;
    let app = app(Some(&idp), true).await;
    let callback = format!("{}/authorize/callback", app.base);

    // Act: facade -> IdP -> facade's callback -> the client's redirect URI.
    let to_idp = authorize(&app, REDIRECT).await;
    let cookie = cookie_of(&to_idp);
    let idp_url = to_idp.headers()["location"].to_str().unwrap().to_string();
    let from_idp = app.client.get(&idp_url).send().await.unwrap();
    let at_callback = from_idp.headers()["location"].to_str().unwrap().to_string();
    let to_client = app
        .client
        .get(&at_callback)
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    // The same authorization response from a browser without the cookie.
    let other_browser = app.client.get(&at_callback).send().await.unwrap();
    let at_client = to_client.headers()["location"]
        .to_str()
        .unwrap()
        .to_string();
    let code = query_of(&at_client)["code"].clone();
    let redeem = |redirect: &str| {
        app.client
            .post(format!("{}/token", app.base))
            .form(&[
                ("grant_type", "authorization_code"),
                ("client_id", "any-client"),
                ("code", code.as_str()),
                (
                    "code_verifier",
                    "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
                ),
                ("redirect_uri", redirect),
            ])
            .send()
    };
    let plain = app
        .client
        .post(format!("{}/token", app.base))
        .form(&[
            ("grant_type", "authorization_code"),
            ("client_id", "any-client"),
            ("code", "an-idp-code-the-facade-never-saw"),
            (
                "code_verifier",
                "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
            ),
            ("redirect_uri", REDIRECT),
        ])
        .send()
        .await
        .unwrap();
    let plain_status = plain.status();
    let plain_body: Value = plain.json().await.unwrap();
    let elsewhere = redeem("http://127.0.0.1:10/callback").await.unwrap();
    let elsewhere_status = elsewhere.status();
    let elsewhere_body: Value = elsewhere.json().await.unwrap();
    let tokens: Value = redeem(REDIRECT).await.unwrap().json().await.unwrap();

    // Assert: the IdP saw the facade's callback, with loanhost's state sealed in its own.
    let sent = query_of(&idp_url);
    assert_eq!(sent["redirect_uri"], callback);
    assert_ne!(sent["state"], "client-state");
    assert!(
        query_of(&at_callback).contains_key("iss"),
        "the IdP sends iss"
    );
    // The client got its own state and a code, and no iss.
    assert_eq!(to_client.status(), 302);
    assert!(
        at_client.starts_with(&format!("{REDIRECT}?")),
        "{at_client}"
    );
    let back = query_of(&at_client);
    assert_eq!(back["state"], "client-state");
    assert!(!back.contains_key("iss"));
    assert_eq!(to_client.headers()["cache-control"], "no-store");
    // The browser's secret is spent by the first use (the browser drops the cookie), and the
    // state alone, in another browser, is refused.
    let cleared = to_client.headers()["set-cookie"].to_str().unwrap();
    assert!(cleared.contains("Max-Age=0"), "{cleared}");
    assert_eq!(other_browser.status(), 400);
    assert!(other_browser.headers().get("location").is_none());
    // The IdP's code is not readable in what the client got.
    assert!(code.starts_with("lhc2."), "{code}");
    // A code the facade did not issue is refused before the IdP sees it.
    assert_eq!(plain_status, 400);
    assert_eq!(plain_body["error"], "invalid_grant");
    // The code, presented with another redirect URI, is refused before the IdP sees it.
    assert_eq!(elsewhere_status, 400);
    assert_eq!(elsewhere_body["error"], "invalid_grant");
    // Presented with its own, the IdP got its own code and the callback as the redirect URI.
    let access = tokens["access_token"]
        .as_str()
        .expect("a token")
        .to_string();
    let claims = claims_of(&access);
    assert_eq!(claims["authorize_request"]["redirect_uri"], callback);
    assert_eq!(claims["token_redirect_uri"], callback);
}

#[tokio::test]
async fn the_callback_refuses_another_issuer_a_forged_state_and_unlisted_redirects() {
    // Arrange
    let idp = mock_idp_sending("agent@example.com", true).await;
    let app = app(Some(&idp), true).await;
    let to_idp = authorize(&app, REDIRECT).await;
    let cookie = cookie_of(&to_idp);
    let idp_url = to_idp.headers()["location"].to_str().unwrap().to_string();
    let sealed = query_of(&idp_url)["state"].clone();
    let callback = |query: Vec<(&str, &str)>| {
        let query = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(query)
            .finish();
        app.client
            .get(format!("{}/authorize/callback?{query}", app.base))
            .header("cookie", &cookie)
            .send()
    };

    // Act
    let other_issuer = callback(vec![
        ("code", "c"),
        ("state", &sealed),
        ("iss", "https://attacker.example"),
    ])
    .await
    .unwrap();
    let forged = callback(vec![("code", "c"), ("state", "client-state")])
        .await
        .unwrap();
    let no_code = callback(vec![("state", &sealed)]).await.unwrap();
    let denied = callback(vec![
        ("error", "access_denied"),
        ("error_description", "the user said no"),
        ("error_uri", "https://attacker.example/help"),
        ("state", &sealed),
        ("iss", &idp.issuer),
    ])
    .await
    .unwrap();
    let unlisted = authorize(&app, "https://evil.example/cb").await;
    let unlisted_body: Value = unlisted.json().await.unwrap();
    let to_callback = authorize(&app, &format!("{}/authorize/callback", app.base)).await;
    let to_callback_body: Value = to_callback.json().await.unwrap();
    let planted = authorize(&app, "http://127.0.0.1:9/callback?code=planted").await;

    // Assert: no code and no error text reach the client from another issuer.
    assert_eq!(other_issuer.status(), 400);
    assert!(other_issuer.headers().get("location").is_none());
    assert_eq!(forged.status(), 400);
    assert!(forged.headers().get("location").is_none());
    assert_eq!(no_code.status(), 400);
    // The IdP's own error goes to the client, with its state and without the IdP's iss.
    assert_eq!(denied.status(), 302);
    let back = query_of(denied.headers()["location"].to_str().unwrap());
    assert_eq!(back["error"], "access_denied");
    assert_eq!(back["error_description"], "the user said no");
    assert_eq!(back["state"], "client-state");
    assert!(!back.contains_key("iss"));
    assert!(
        !back.contains_key("error_uri"),
        "an error_uri is not passed on"
    );
    assert_eq!(unlisted_body["error"], "invalid_request");
    assert!(
        to_callback_body["error_description"]
            .as_str()
            .unwrap()
            .contains("own authorization callback"),
        "{to_callback_body}"
    );
    assert_eq!(planted.status(), 400);
    assert!(
        unlisted_body["error_description"]
            .as_str()
            .unwrap()
            .contains("LOANHOST_AUTHORIZE_REDIRECT_URIS"),
        "{unlisted_body}"
    );
}

#[tokio::test]
async fn a_listed_redirect_uri_is_allowed_only_for_its_client() {
    // Arrange
    let idp = mock_idp_sending("agent@example.com", true).await;
    let mut options = AppOptions::default();
    options.env.extend(idp.settings());
    options
        .env
        .push(("LOANHOST_AUTHORIZE_CALLBACK", "true".into()));
    options.env.push((
        "LOANHOST_AUTHORIZE_REDIRECT_URIS",
        "app=https://app.example/cb".into(),
    ));
    let app = spawn_app_with(options).await;

    // Act
    let own = authorize_as(&app, "app", "https://app.example/cb").await;
    let other = authorize_as(&app, "another", "https://app.example/cb").await;

    // Assert
    assert_eq!(own.status(), 302);
    assert_eq!(other.status(), 400);
}
