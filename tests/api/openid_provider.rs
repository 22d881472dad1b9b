//! Sign-in through a certified OpenID Provider (`oidc-provider`, OpenID Certified, from npm),
//! as an operator would connect one: loanhost's facade with `LOANHOST_IDP_PROFILE=oidc` and its
//! authorization callback (the OP sends RFC 9207's `iss`), loanhost's default audience (not its
//! base URL), the OP's own login and consent pages filled in by a person's stand-in, and the
//! official Python MCP SDK as the client, with `client_secret_basic` and `client_secret_post`,
//! ES256 and RS256 access tokens, a refresh through `/token`, a cancelled sign-in, an unknown
//! email, and an OP whose key set holds keys loanhost does not verify with.

use serde_json::Value;

use crate::helpers::{free_port, spawn_app_with, AppOptions, TestApp};
use crate::real_clients::python_client;

/// The OP, and the loanhost in front of it.
pub(crate) struct Setup {
    pub app: TestApp,
    pub issuer: String,
    pub clients: Value,
    _op: tokio::process::Child,
}

/// loanhost (the metadata tool, the `oidc` profile, the callback on, its default audience)
/// in front of an `oidc-provider` signing access tokens with `alg`; `extra_keys` publishes keys
/// loanhost cannot verify with beside the signing keys.
async fn setup(alg: &str, extra_keys: bool) -> Setup {
    let env = [
        ("OP_ALG", alg.to_string()),
        (
            "OP_EXTRA_KEYS",
            if extra_keys { "1" } else { "0" }.to_string(),
        ),
    ];
    setup_op("oidc", &[], &env).await
}

/// loanhost (the metadata tool, LOANHOST_IDP_PROFILE=`profile`, the callback on, beside
/// `loanhost_env`) in front of an `oidc-provider` started with `op_env` (its audience
/// loanhost's, unless `op_env` names one), on the OP's issuer whatever path it has.
pub(crate) async fn setup_op(
    profile: &str,
    loanhost_env: &[(&'static str, String)],
    op_env: &[(&'static str, String)],
) -> Setup {
    let op_port = free_port();
    let mut options = AppOptions::with_tool("get_loan_reporting_metadata");
    options.env.extend(loanhost_env.iter().cloned());
    let audience = loanhost_env
        .iter()
        .find(|(k, _)| *k == "LOANHOST_MCP_AUDIENCE")
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| "https://loanhost.local/mcp".into());
    let mode = op_env
        .iter()
        .find(|(k, _)| *k == "OP_MODE")
        .map(|(_, v)| v.as_str());
    // The issuer's path, and its routes' names (Okta's are its own).
    let (tenant, [authorize, token, jwks]) = match mode {
        Some("entra") => (format!("/{ENTRA_TENANT}/v2.0"), ["auth", "token", "jwks"]),
        Some("okta") => (
            "/oauth2/default".to_string(),
            ["v1/authorize", "v1/token", "v1/keys"],
        ),
        _ => (String::new(), ["auth", "token", "jwks"]),
    };
    let issuer = format!("http://127.0.0.1:{op_port}{tenant}");
    options.env.extend([
        ("LOANHOST_IDP_ISSUER", issuer.clone()),
        (
            "LOANHOST_IDP_AUTHORIZE_URL",
            format!("{issuer}/{authorize}"),
        ),
        ("LOANHOST_IDP_TOKEN_URL", format!("{issuer}/{token}")),
        ("LOANHOST_IDP_JWKS_URL", format!("{issuer}/{jwks}")),
        ("LOANHOST_IDP_PROFILE", profile.to_string()),
        ("LOANHOST_AUTHORIZE_CALLBACK", "true".to_string()),
    ]);
    let app = spawn_app_with(options).await;
    let mut env = vec![
        ("OP_PORT", op_port.to_string()),
        ("OP_AUDIENCE", audience),
        ("OP_TENANT", ENTRA_TENANT.to_string()),
        (
            "OP_REDIRECT_URI",
            format!("{}/authorize/callback", app.base),
        ),
    ];
    env.extend(op_env.iter().cloned());
    // Node 22, which oidc-provider 9 supports (tests/clients brings it).
    let node = crate::helpers::root().join("tests/clients/node_modules/.bin/node");
    let (op, first) = crate::helpers::node_peer(&node, "oidc_op.mjs", &env).await;
    assert_eq!(first["issuer"], issuer.as_str());
    Setup {
        app,
        issuer,
        clients: first["clients"].clone(),
        _op: op,
    }
}

/// The tenant of the OP set up as Entra ID.
pub(crate) const ENTRA_TENANT: &str = "7d3c1a9e-0b4f-4c2d-8e6a-5f9b1c2d3e4f";

/// One sign-in with the Python SDK as `email`, with the OP's client `which` (`basic` or
/// `post`); `cancel` cancels at the login page.
pub(crate) async fn sign_in(s: &Setup, email: &str, which: &str, cancel: bool) -> Value {
    let client = &s.clients[which];
    let method = format!("client_secret_{which}");
    let mut args = vec![
        "op",
        &s.app.base,
        email,
        client["client_id"].as_str().unwrap(),
        client["client_secret"].as_str().unwrap(),
        &method,
    ];
    if cancel {
        args.push("cancel");
    }
    python_client(&args).await
}

/// One sign-in with the TypeScript SDK as `email`, with the OP's `client_secret_post` client.
pub(crate) async fn ts_sign_in(s: &Setup, email: &str) -> Value {
    let client = &s.clients["post"];
    crate::real_clients::node_client(
        "ts_oauth_client.mjs",
        &[
            &s.app.base,
            email,
            client["client_id"].as_str().unwrap(),
            client["client_secret"].as_str().unwrap(),
            "client_secret_post",
        ],
    )
    .await
}

/// The `alg` of a JWT's header and its claims.
pub(crate) fn header_and_claims(jwt: &str) -> (Value, Value) {
    use base64::Engine as _;
    let part = |i: usize| -> Value {
        let b = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(jwt.split('.').nth(i).unwrap())
            .unwrap();
        serde_json::from_slice(&b).unwrap()
    };
    (part(0), part(1))
}

/// A sign-in through the OP's login and consent pages, then a tool call without error.
pub(crate) fn assert_called_after_the_ops_pages(out: &Value) {
    assert!(out.get("error").is_none(), "{out}");
    assert_eq!(out["isError"], false, "{out}");
    assert_eq!(
        out["pages"],
        serde_json::json!(["login", "consent"]),
        "{out}"
    );
}

/// What every successful sign-in shows: the OP's pages, the facade's rewrite, the SDK's call
/// and a refresh whose token works.
fn assert_signed_in(out: &Value, s: &Setup, alg: &str) {
    assert_called_after_the_ops_pages(out);
    let q = &out["idpQuery"];
    assert_eq!(q["resource"], "https://loanhost.local/mcp", "{q}");
    assert_eq!(q["prompt"], "consent", "{q}");
    assert_eq!(q["scope"], "offline_access", "{q}");
    assert!(q.get("audience").is_none(), "{q}");
    assert_eq!(
        q["redirect_uri"],
        format!("{}/authorize/callback", s.app.base)
    );
    assert_eq!(out["hasRefreshToken"], true, "{out}");
    let (header, claims) = header_and_claims(out["accessToken"].as_str().unwrap());
    assert_eq!(header["alg"], alg);
    assert_eq!(claims["aud"], "https://loanhost.local/mcp");
    assert_eq!(out["refreshStatus"], 200, "{out}");
    assert_ne!(out["refreshedAccessToken"], out["accessToken"]);
    assert_eq!(out["refreshedIsError"], false, "{out}");
}

#[tokio::test]
async fn an_agent_signs_in_through_a_certified_op_with_basic_auth_and_es256() {
    // Arrange
    let s = setup("ES256", false).await;

    // Act
    let out = sign_in(&s, "Agent@Example.com", "basic", false).await;

    // Assert
    assert_signed_in(&out, &s, "ES256");
}

#[tokio::test]
async fn an_admin_signs_in_with_post_auth_and_rs256_beside_keys_loanhost_skips() {
    // Arrange: the OP's key set also holds Ed25519, P-521, X25519 and an encryption RSA key.
    let s = setup("RS256", true).await;
    let jwks: Value = reqwest::get(format!("{}/jwks", s.issuer))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let kids: Vec<&str> = jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|k| k["kid"].as_str())
        .collect();
    for kid in [
        "p521-sig",
        "x25519-enc",
        "rsa-enc",
        "ed25519-sig",
        "rs256-sig",
    ] {
        assert!(kids.contains(&kid), "{kids:?}");
    }

    // Act
    let out = sign_in(&s, "admin@example.com", "post", false).await;

    // Assert
    assert_signed_in(&out, &s, "RS256");
}

#[tokio::test]
async fn a_cancelled_sign_in_reaches_the_client_with_its_error_and_state() {
    // Arrange
    let s = setup("ES256", false).await;

    // Act
    let out = sign_in(&s, "Agent@Example.com", "basic", true).await;

    // Assert: the OP's access_denied came back through the callback with the client's state,
    // without the OP's iss; the SDK reports the failed sign-in.
    let callback = &out["callback"];
    assert_eq!(callback["error"], "access_denied", "{out}");
    assert!(
        callback["state"].as_str().is_some_and(|s| !s.is_empty()),
        "{out}"
    );
    assert!(callback.get("iss").is_none(), "{out}");
    assert!(out["error"].is_string(), "{out}");
}

#[tokio::test]
async fn an_email_no_agent_has_is_refused_with_the_resource_metadata_pointer() {
    // Arrange
    let s = setup("ES256", false).await;

    // Act: the OP signs the stranger in; loanhost knows no such agent.
    let out = sign_in(&s, "stranger@example.com", "basic", false).await;
    let token = out["accessToken"]
        .as_str()
        .expect("the OP issued a token")
        .to_string();
    let resp = s
        .app
        .client
        .post(format!("{}/mcp", s.app.base))
        .bearer_auth(&token)
        .json(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();

    // Assert
    assert!(out["error"].is_string(), "{out}");
    assert_eq!(resp.status(), 401);
    let challenge = resp.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(challenge.contains("resource_metadata="), "{challenge}");
}

#[tokio::test]
async fn the_typescript_sdk_signs_in_through_the_certified_op() {
    // Arrange
    let s = setup("ES256", true).await;

    // Act
    let out = ts_sign_in(&s, "Agent@Example.com").await;

    // Assert: through the OP's pages and the facade's callback (no iss reaches the client),
    // a tool call with the token, and a refresh token granted.
    assert_called_after_the_ops_pages(&out);
    assert_eq!(out["iss"], Value::Null, "{out}");
    assert_eq!(
        out["idpRedirectUri"],
        format!("{}/authorize/callback", s.app.base)
    );
    assert_eq!(out["hasRefreshToken"], true, "{out}");
}

/// A sign-in whose IdP answered loanhost's callback, and which left the client a refresh
/// token.
pub(crate) fn assert_through_the_callback_with_a_refresh_token(out: &Value, s: &Setup) {
    assert_called_after_the_ops_pages(out);
    assert_eq!(out["hasRefreshToken"], true, "{out}");
    assert_eq!(
        out["idpRedirectUri"],
        format!("{}/authorize/callback", s.app.base)
    );
}

/// A refresh through `/token` that gave a new token, which works.
pub(crate) fn assert_refreshed(out: &Value) {
    assert_eq!(out["hasRefreshToken"], true, "{out}");
    assert_eq!(out["refreshStatus"], 200, "{out}");
    assert_ne!(out["refreshedAccessToken"], out["accessToken"]);
    assert_eq!(out["refreshedIsError"], false, "{out}");
}

/// A sign-in the IdP refused for the `resource` it was sent (`resource`), with no token.
pub(crate) fn assert_refused_for_its_resource(out: &Value, resource: &str) {
    assert!(out["error"].is_string(), "{out}");
    assert_eq!(out["idpQuery"]["resource"], resource, "{out}");
    assert!(out.get("accessToken").is_none_or(Value::is_null), "{out}");
}

/// The IdP's authorization request named the API by nothing but its scope (no `resource`,
/// `audience` or `prompt`), and was sent through loanhost's callback.
pub(crate) fn assert_asked_by_scope_alone(q: &Value, s: &Setup) {
    for absent in ["resource", "audience", "prompt"] {
        assert!(q.get(absent).is_none(), "{absent}: {q}");
    }
    assert_eq!(
        q["redirect_uri"],
        format!("{}/authorize/callback", s.app.base)
    );
}
