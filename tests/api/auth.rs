//! Bearer authentication end to end with real RS256 tokens: every way a token can be wrong
//! gets the exact `401`; the internal scheme is routed by issuer.

use std::time::{SystemTime, UNIX_EPOCH};

use axum::routing::get;
use loanhost::oauth::devidp::SigningKey;
use serde_json::{json, Value};

use crate::helpers::{signing_pem, spawn_app, spawn_app_with, AppOptions, TestApp};

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn claims(app: &TestApp) -> Value {
    json!({
        "iss": format!("{}/dev-idp", app.base),
        "aud": "https://loanhost.local/mcp",
        "email": "agent@example.com",
        "iat": now(),
        "exp": now() + 300,
    })
}

fn tools_list() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
}

async fn assert_401(app: &TestApp, resp: reqwest::Response, case: &str) {
    assert_eq!(resp.status(), 401, "{case}");
    let challenges: Vec<&str> = resp
        .headers()
        .get_all("www-authenticate")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    let expected = format!(
        "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource\"",
        app.base
    );
    assert_eq!(challenges, vec![expected.as_str(), "Bearer"], "{case}");
    assert!(
        resp.bytes().await.unwrap().is_empty(),
        "{case}: body must be empty"
    );
}

async fn call_with(app: &TestApp, token: &str) -> reqwest::Response {
    app.client
        .post(format!("{}/mcp", app.base))
        .bearer_auth(token)
        .json(&tools_list())
        .send()
        .await
        .unwrap()
}

fn b64(v: &Value) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
}

#[tokio::test]
async fn a_valid_token_is_accepted_with_case_insensitive_email() {
    // Arrange
    let app = spawn_app().await;
    let token = app.key.sign(&claims(&app)).unwrap(); // agent@example.com vs Agent@Example.com

    // Act
    let resp = call_with(&app, &token).await;

    // Assert
    assert_eq!(resp.status(), 200);
}

#[tokio::test]
async fn every_bad_token_gets_the_exact_401() {
    // Arrange
    let app = spawn_app().await;
    let key = &app.key;
    let other =
        SigningKey::load_or_create(&tempfile::tempdir().unwrap().path().join("o.pem")).unwrap();
    let with = |f: &dyn Fn(&mut Value)| {
        let mut c = claims(&app);
        f(&mut c);
        key.sign(&c).unwrap()
    };
    let good = with(&|_| {});
    let kid = key.jwks().keys[0].common.key_id.clone().unwrap();
    let header = |alg: &str, kid: Option<&str>| {
        let mut h = json!({"alg": alg, "typ": "JWT"});
        if let Some(k) = kid {
            h["kid"] = json!(k);
        }
        h
    };
    // A token whose signature is another key's, under our kid.
    let forged = {
        let theirs = other.sign(&claims(&app)).unwrap();
        let sig = theirs.rsplit('.').next().unwrap().to_string();
        let mut parts: Vec<&str> = good.split('.').collect();
        parts[2] = &sig;
        parts.join(".")
    };
    let unknown_kid = format!(
        "{}.{}.{}",
        b64(&header("RS256", Some("not-a-key"))),
        b64(&claims(&app)),
        good.rsplit('.').next().unwrap()
    );
    let alg_none = format!("{}.{}.", b64(&header("none", None)), b64(&claims(&app)));
    let hs256 = {
        let public_pem = {
            use rsa::pkcs1::DecodeRsaPrivateKey as _;
            use rsa::pkcs8::EncodePublicKey as _;
            let sk = rsa::RsaPrivateKey::from_pkcs1_pem(signing_pem()).unwrap();
            sk.to_public_key()
                .to_public_key_pem(rsa::pkcs8::LineEnding::LF)
                .unwrap()
        };
        let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
        h.kid = Some(kid.clone());
        jsonwebtoken::encode(
            &h,
            &claims(&app),
            &jsonwebtoken::EncodingKey::from_secret(public_pem.as_bytes()),
        )
        .unwrap()
    };
    let cases: Vec<(&str, String)> = vec![
        ("expired", with(&|c| c["exp"] = json!(now() - 120))),
        ("not yet valid", with(&|c| c["nbf"] = json!(now() + 120))),
        (
            "wrong issuer",
            with(&|c| c["iss"] = json!("https://evil.example")),
        ),
        (
            "wrong audience",
            with(&|c| c["aud"] = json!("https://other/api")),
        ),
        (
            "no email",
            with(&|c| {
                c.as_object_mut().unwrap().remove("email");
            }),
        ),
        (
            "unknown email",
            with(&|c| c["email"] = json!("nobody@example.com")),
        ),
        ("bad signature", forged),
        ("unknown kid", unknown_kid),
        ("alg none", alg_none),
        ("HS256 with the public key", hs256),
        ("garbage", "abc.def.ghi".into()),
    ];

    for (case, token) in cases {
        // Act
        let resp = call_with(&app, &token).await;

        // Assert
        assert_401(&app, resp, case).await;
    }
}

#[tokio::test]
async fn only_a_bearer_header_is_accepted() {
    // Arrange
    let app = spawn_app().await;
    let token = app.bearer("agent-token");
    let url = format!("{}/mcp", app.base);

    // Act
    let none = app
        .client
        .post(&url)
        .json(&tools_list())
        .send()
        .await
        .unwrap();
    let basic = app
        .client
        .post(&url)
        .header("authorization", format!("Basic {token}"))
        .json(&tools_list())
        .send()
        .await
        .unwrap();
    let empty = app
        .client
        .post(&url)
        .header("authorization", "Bearer")
        .json(&tools_list())
        .send()
        .await
        .unwrap();
    let in_query = app
        .client
        .post(format!("{url}?access_token={token}"))
        .json(&tools_list())
        .send()
        .await
        .unwrap();
    let mut body = tools_list();
    body["access_token"] = json!(token);
    let in_body = app.client.post(&url).json(&body).send().await.unwrap();

    // Assert
    for (case, resp) in [
        ("none", none),
        ("basic", basic),
        ("empty bearer", empty),
        ("query", in_query),
        ("body", in_body),
    ] {
        assert_401(&app, resp, case).await;
    }
}

/// An internal identity provider's JWKS on an ephemeral port.
async fn internal_jwks(key: &SigningKey) -> String {
    let set = serde_json::to_value(key.jwks()).unwrap();
    let router = axum::Router::new().route("/jwks", get(move || async move { axum::Json(set) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    url
}

#[tokio::test]
async fn the_internal_scheme_is_routed_by_issuer() {
    // Arrange
    let internal_key =
        SigningKey::load_or_create(&tempfile::tempdir().unwrap().path().join("i.pem")).unwrap();
    let mut options = AppOptions::default();
    options.env.push((
        "LOANHOST_INTERNAL_ISSUER",
        "https://internal.loanhost.test".into(),
    ));
    options.env.push((
        "LOANHOST_INTERNAL_JWKS_URL",
        internal_jwks(&internal_key).await,
    ));
    let app = spawn_app_with(options).await;
    let mut c = claims(&app);
    c["iss"] = json!("https://internal.loanhost.test");

    // Act
    let right_key = call_with(&app, &internal_key.sign(&c).unwrap()).await;
    let wrong_key = call_with(&app, &app.key.sign(&c).unwrap()).await;

    // Assert
    assert_eq!(right_key.status(), 200);
    assert_401(&app, wrong_key, "internal token signed by the upstream key").await;
}

#[tokio::test]
async fn transport_guards() {
    // Arrange
    let app = spawn_app().await;
    let url = format!("{}/mcp", app.base);
    let token = app.bearer("agent-token");

    // Act
    let foreign = app
        .client
        .post(&url)
        .bearer_auth(&token)
        .header("origin", "https://evil.example")
        .json(&tools_list())
        .send()
        .await
        .unwrap();
    let own = app
        .client
        .post(&url)
        .bearer_auth(&token)
        .header("origin", &app.base)
        .json(&tools_list())
        .send()
        .await
        .unwrap();
    let version = app
        .client
        .post(&url)
        .bearer_auth(&token)
        .header("mcp-protocol-version", "1999-01-01")
        .json(&tools_list())
        .send()
        .await
        .unwrap();
    let good_version = app
        .client
        .post(&url)
        .bearer_auth(&token)
        .header("mcp-protocol-version", "2025-06-18")
        .json(&tools_list())
        .send()
        .await
        .unwrap();
    let huge = app
        .client
        .post(&url)
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body(vec![b' '; 2 * 1024 * 1024])
        .send()
        .await
        .unwrap();
    let get = app
        .client
        .get(&url)
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    let batch_new = app
        .client
        .post(&url)
        .bearer_auth(&token)
        .header("mcp-protocol-version", "2025-06-18")
        .json(&json!([tools_list()]))
        .send()
        .await
        .unwrap();
    let batch_old = app
        .client
        .post(&url)
        .bearer_auth(&token)
        .header("mcp-protocol-version", "2025-03-26")
        .json(&json!([tools_list(), {"jsonrpc": "2.0", "method": "notifications/initialized"}]))
        .send()
        .await
        .unwrap();

    // Assert
    assert_eq!(foreign.status(), 403);
    assert_eq!(own.status(), 200);
    assert_eq!(version.status(), 400);
    let body: Value = version.json().await.unwrap();
    assert_eq!(
        body["error"],
        json!({"code": -32022, "message": "Unsupported protocol version", "data": {"supported": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"], "requested": "1999-01-01"}})
    );
    assert_eq!(good_version.status(), 200);
    assert_eq!(huge.status(), 413);
    assert_eq!(get.status(), 405);
    assert_eq!(batch_new.status(), 400);
    assert_eq!(batch_old.status(), 200);
    let replies: Value = batch_old.json().await.unwrap();
    assert_eq!(
        replies.as_array().unwrap().len(),
        1,
        "the notification gets no reply"
    );
}

#[tokio::test]
async fn agents_are_resolved_on_every_request() {
    // Arrange: a valid token for an email that is not (yet) a platform agent.
    let app = spawn_app().await;
    let mut c = claims(&app);
    c["email"] = json!("new.hire@example.com");
    let token = app.key.sign(&c).unwrap();
    let before = call_with(&app, &token).await;

    // Act: the agent appears in the platform's directory.
    app.db
        .upsert_agent(&loanhost::data::NewAgent {
            id: "00000000-0000-0000-0000-0000000000d4".into(),
            email: "New.Hire@example.com".into(),
            roles: vec!["Agent".into()],
            ..Default::default()
        })
        .await
        .unwrap();
    let after = call_with(&app, &token).await;

    // Assert
    assert_401(&app, before, "unknown email").await;
    assert_eq!(after.status(), 200, "resolved without a restart");
}

/// A JWKS endpoint that answers slowly and counts its fetches.
async fn slow_jwks(
    keys: jsonwebtoken::jwk::JwkSet,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let fetches = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = fetches.clone();
    let router = axum::Router::new().route(
        "/jwks",
        get(move || {
            let keys = keys.clone();
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                tokio::time::sleep(std::time::Duration::from_millis(300)).await;
                axum::Json(keys)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (url, fetches)
}

#[tokio::test]
async fn jwks_refreshes_are_single_flight_and_rate_limited() {
    // Arrange: a slow IdP; 20 sign-ins arrive together on a cold cache, then 20 tokens with
    // forged `kid`s.
    use loanhost::auth::{jwks::Jwks, jwt};
    let key = SigningKey::from_pem(signing_pem()).unwrap();
    let (url, fetches) = slow_jwks(key.jwks()).await;
    let validator = std::sync::Arc::new(jwt::TokenValidator::new(
        "aud",
        vec![jwt::Scheme {
            name: "upstream",
            issuer: "https://idp.test".into(),
            jwks: std::sync::Arc::new(Jwks::from_url(url)),
        }],
    ));
    let claims =
        json!({"iss": "https://idp.test", "aud": "aud", "email": "a@b.c", "exp": now() + 300});
    let good = key.sign(&claims).unwrap();
    let forged = {
        let mut parts: Vec<String> = good.split('.').map(str::to_string).collect();
        parts[0] = b64(&json!({"alg": "RS256", "typ": "JWT", "kid": "forged"}));
        parts.join(".")
    };
    let validate_all = |token: String| {
        let validator = validator.clone();
        async move {
            let tasks: Vec<_> = (0..20)
                .map(|_| {
                    let (v, t) = (validator.clone(), token.clone());
                    tokio::spawn(async move { v.validate(&t).await.map(|_| ()) })
                })
                .collect();
            let mut results = Vec::new();
            for t in tasks {
                results.push(t.await.unwrap());
            }
            results
        }
    };

    // Act
    let cold = validate_all(good.clone()).await;
    let after_cold = fetches.load(std::sync::atomic::Ordering::SeqCst);
    let started = std::time::Instant::now();
    let forged_results = validate_all(forged).await;
    let forged_took = started.elapsed();
    let warm = validate_all(good).await;

    // Assert
    assert!(cold.iter().all(Result::is_ok), "{cold:?}");
    assert_eq!(after_cold, 1, "one fetch serves every waiting sign-in");
    assert!(forged_results
        .iter()
        .all(|r| r.as_ref().unwrap_err() == "no signing key with kid \"forged\""));
    assert_eq!(
        fetches.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "forged kids within the refresh interval fetch nothing"
    );
    assert!(
        forged_took < std::time::Duration::from_millis(250),
        "forged kids waited for the IdP: {forged_took:?}"
    );
    assert!(warm.iter().all(Result::is_ok));
}
