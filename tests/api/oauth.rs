//! The OAuth facade: discovery documents, `/authorize` rewriting, `/token` pass-through (here
//! against the embedded dev IdP), and the REST token endpoint.

use serde_json::{json, Value};

use crate::helpers::{spawn_app, spawn_app_with, AppOptions};

#[tokio::test]
async fn discovery_documents_name_the_service_itself() {
    // Arrange
    let app = spawn_app().await;

    // Act
    let prm: Value = app
        .client
        .get(format!("{}/.well-known/oauth-protected-resource", app.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let asm: Value = app
        .client
        .get(format!(
            "{}/.well-known/oauth-authorization-server",
            app.base
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();

    // Assert
    assert_eq!(
        prm,
        json!({"resource": app.base, "authorization_servers": [app.base], "bearer_methods_supported": ["header"], "scopes_supported": []})
    );
    assert_eq!(
        asm,
        json!({
            "issuer": app.base,
            "authorization_endpoint": format!("{}/authorize", app.base),
            "token_endpoint": format!("{}/token", app.base),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"]
        })
    );
}

#[tokio::test]
async fn authorize_redirects_to_the_idp_with_rewritten_parameters() {
    // Arrange
    let app = spawn_app().await;
    let q = "response_type=code&client_id=loanhost-demo&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcb&state=xyz&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256&resource=http%3A%2F%2Fx&audience=y&scope=openid";

    // Act
    let resp = app
        .client
        .get(format!("{}/authorize?{q}", app.base))
        .send()
        .await
        .unwrap();
    let plain = app.client.get(format!("{}/authorize?response_type=code&client_id=c&code_challenge=a&code_challenge_method=plain", app.base)).send().await.unwrap();

    // Assert
    assert_eq!(resp.status(), 302);
    let location = resp.headers()["location"].to_str().unwrap();
    assert_eq!(
        location,
        format!(
            "{}/dev-idp/authorize?response_type=code&client_id=loanhost-demo&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcb&state=xyz&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256&scope=openid+offline_access&audience=https%3A%2F%2Floanhost.local%2Fmcp",
            app.base
        )
    );
    assert_eq!(plain.status(), 400);
    let body: Value = plain.json().await.unwrap();
    assert_eq!(body["error"], "invalid_request");
}

#[tokio::test]
async fn the_code_flow_through_the_facade_yields_tokens_that_work() {
    // Arrange
    let app = spawn_app().await;
    let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
    let redirect = "http://127.0.0.1:9/callback";
    let authorize = format!(
        "{}/authorize?response_type=code&client_id=loanhost-demo&redirect_uri={}&state=s1&code_challenge={challenge}&code_challenge_method=S256&login_hint=agent%40example.com",
        app.base,
        url_encode(redirect)
    );

    // Act: facade -> dev IdP (the user picks the agent; the facade passed no `login_hint`,
    // which the spec does not list) -> redirect with a code.
    let to_idp = app.client.get(&authorize).send().await.unwrap();
    let idp_url = to_idp.headers()["location"].to_str().unwrap().to_string();
    assert!(!idp_url.contains("login_hint"), "{idp_url}");
    let idp_url = format!("{idp_url}&login_hint=agent%40example.com");
    let to_client = app.client.get(&idp_url).send().await.unwrap();
    let callback = reqwest::Url::parse(to_client.headers()["location"].to_str().unwrap()).unwrap();
    let code = callback
        .query_pairs()
        .find(|(k, _)| k == "code")
        .unwrap()
        .1
        .into_owned();
    let state = callback
        .query_pairs()
        .find(|(k, _)| k == "state")
        .unwrap()
        .1
        .into_owned();
    let form = format!(
        "grant_type=authorization_code&client_id=loanhost-demo&client_secret=loanhost-demo-secret&code={code}&code_verifier={verifier}&redirect_uri={}",
        url_encode(redirect)
    );
    let token_resp = app
        .client
        .post(format!("{}/token", app.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .unwrap();
    let status = token_resp.status();
    let cache = token_resp
        .headers()
        .get("cache-control")
        .map(|v| v.to_str().unwrap().to_string());
    let tokens: Value = token_resp.json().await.unwrap();
    let access = tokens["access_token"].as_str().unwrap();
    let call = app
        .client
        .post(format!("{}/mcp", app.base))
        .bearer_auth(access)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .send()
        .await
        .unwrap();
    // Refresh with client_secret_basic.
    let refresh = app
        .client
        .post(format!("{}/token", app.base))
        .basic_auth("loanhost-demo", Some("loanhost-demo-secret"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!(
            "grant_type=refresh_token&refresh_token={}",
            tokens["refresh_token"].as_str().unwrap()
        ))
        .send()
        .await
        .unwrap();
    let refreshed: Value = refresh.json().await.unwrap();
    let bad = app
        .client
        .post(format!("{}/token", app.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(
            "grant_type=refresh_token&client_id=loanhost-demo&client_secret=wrong&refresh_token=x",
        )
        .send()
        .await
        .unwrap();

    // Assert
    assert_eq!(to_idp.status(), 302);
    assert_eq!(state, "s1");
    assert_eq!(status, 200);
    assert_eq!(cache.as_deref(), Some("no-store"));
    assert_eq!(tokens["token_type"], "Bearer");
    assert!(
        tokens["refresh_token"].is_string(),
        "offline_access is forced, so a refresh token comes back"
    );
    assert_eq!(call.status(), 200);
    assert!(refreshed["access_token"].is_string());
    assert_eq!(
        bad.status(),
        401,
        "the IdP's status passes through unchanged"
    );
}

#[tokio::test]
async fn an_unreachable_idp_is_a_502() {
    // Arrange
    let mut options = AppOptions::default();
    options
        .env
        .push(("LOANHOST_IDP_TOKEN_URL", "http://127.0.0.1:9/token".into()));
    let app = spawn_app_with(options).await;

    // Act
    let resp = app
        .client
        .post(format!("{}/token", app.base))
        .body("grant_type=refresh_token&refresh_token=x")
        .send()
        .await
        .unwrap();

    // Assert
    assert_eq!(resp.status(), 502);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"], "temporarily_unavailable");
}

#[tokio::test]
async fn rest_token_endpoint() {
    // Arrange
    let app = spawn_app().await;
    let url = format!("{}/api/oauth/token", app.base);
    let token = app.bearer("agent-token");
    let post = |body: &'static str, content_type: Option<&'static str>, auth: Option<String>| {
        let (client, url) = (app.client.clone(), url.clone());
        async move {
            let mut req = client.post(url).body(body);
            if let Some(ct) = content_type {
                req = req.header("content-type", ct);
            }
            if let Some(a) = auth {
                req = req.header("authorization", a);
            }
            req.send().await.unwrap()
        }
    };
    let bearer = Some(format!("Bearer {token}"));
    let json = Some("application/json");

    // Act
    let ok = post(
        r#"{"client_id": "a", "client_secret": null}"#,
        json,
        bearer.clone(),
    )
    .await;
    let empty = post("", json, bearer.clone()).await;
    let extra = post(r#"{"client_id": "a", "extra": true}"#, json, bearer.clone()).await;
    let odata = post(
        r#"{"client_id": "a"}"#,
        Some("application/json;odata.metadata=minimal;odata.streaming=true"),
        bearer.clone(),
    )
    .await;
    let malformed = post(r#"{"client_id": "#, json, bearer.clone()).await;
    let wrong_type = post(r#"{"client_id": 5}"#, json, bearer.clone()).await;
    let form = post(
        "client_id=a",
        Some("application/x-www-form-urlencoded"),
        bearer.clone(),
    )
    .await;
    let basic = post("{}", json, Some("Basic YTpi".into())).await;
    let none = post("{}", json, None).await;

    // Assert
    for (what, r) in [
        ("ok", &ok),
        ("empty", &empty),
        ("extra", &extra),
        ("odata", &odata),
    ] {
        assert_eq!(r.status(), 200, "{what}");
    }
    assert!(ok.bytes().await.unwrap().is_empty());
    let problem = |r: reqwest::Response| async move {
        assert_eq!(r.headers()["content-type"], "application/problem+json");
        r.json::<Value>().await.unwrap()
    };
    assert_eq!(malformed.status(), 400);
    let p = problem(malformed).await;
    assert_eq!(
        (p["status"].clone(), p["title"].clone()),
        (json!(400), json!("One or more validation errors occurred."))
    );
    assert!(
        p["errors"]["$"][0]
            .as_str()
            .unwrap()
            .starts_with("The request body is not valid JSON"),
        "{p}"
    );
    assert_eq!(wrong_type.status(), 400);
    let v: loanhost_models::ValidationProblemDetails =
        serde_json::from_value(problem(wrong_type).await).unwrap();
    assert_eq!(
        serde_json::to_value(v.errors).unwrap(),
        json!({"client_id": ["The client_id field must be a string or null."]})
    );
    assert_eq!(form.status(), 415);
    let p = problem(form).await;
    assert_eq!(p["status"], 415);
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("application/x-www-form-urlencoded"),
        "{p}"
    );
    for r in [basic, none] {
        assert_eq!(r.status(), 401);
        assert!(r.headers().get("www-authenticate").is_some());
        let p = problem(r).await;
        // Every answer reads as the spec's ProblemDetails, naming the request.
        let details: loanhost_models::ProblemDetails = serde_json::from_value(p).unwrap();
        assert_eq!(details.status, Some(401));
        assert_eq!(details.title.as_deref(), Some("Unauthorized"));
        assert_eq!(details.instance.as_deref(), Some("/api/oauth/token"));
        assert!(details.detail.unwrap().contains("bearer token"));
    }
}

fn url_encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

#[tokio::test]
async fn token_forwards_beyond_the_cap_are_refused_at_once() {
    // Arrange: an IdP that accepts a connection and never answers; one forward at a time.
    let idp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let idp_url = format!("http://{}/token", idp.local_addr().unwrap());
    let mut options = AppOptions::default();
    options.env.push(("LOANHOST_IDP_TOKEN_URL", idp_url));
    options
        .env
        .push(("LOANHOST_MAX_TOKEN_FORWARDS", "1".into()));
    let app = spawn_app_with(options).await;
    let token = |app: &crate::helpers::TestApp| {
        app.client
            .post(format!("{}/token", app.base))
            .body("grant_type=refresh_token&refresh_token=x")
            .send()
    };

    // Act: the first request is forwarded (the IdP's accept is the signal), the second is not.
    let held = tokio::spawn(token(&app));
    let (_connection, _) = idp.accept().await.unwrap();
    let refused = token(&app).await.unwrap();
    let status = refused.status();
    let retry = refused.headers().get("retry-after").cloned();
    let body: Value = refused.json().await.unwrap();
    held.abort();

    // Assert
    assert_eq!(status, 503);
    assert_eq!(retry.unwrap(), "1");
    assert_eq!(body["error"], "temporarily_unavailable");
}

#[tokio::test]
async fn with_a_password_the_dev_idp_signs_in_only_who_gives_it() {
    // Arrange: the dev IdP as it runs behind a tunnel (`LOANHOST_DEV_IDP_PASSWORD`).
    let mut options = AppOptions::default();
    options
        .env
        .push(("LOANHOST_DEV_IDP_PASSWORD", "correct horse battery".into()));
    let app = spawn_app_with(options).await;
    let request = "response_type=code&client_id=loanhost-demo&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcb&state=s1&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256";
    let submit = |password: Option<&str>| {
        let mut form = format!("{request}&email=agent%40example.com");
        if let Some(p) = password {
            form.push_str(&format!("&password={}", url_encode(p)));
        }
        app.client
            .post(format!("{}/dev-idp/authorize", app.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form)
            .send()
    };

    // Act
    let hinted = app
        .client
        .get(format!(
            "{}/dev-idp/authorize?{request}&login_hint=agent%40example.com",
            app.base
        ))
        .send()
        .await
        .unwrap();
    let without = submit(None).await.unwrap();
    let wrong = submit(Some("correct horse")).await.unwrap();
    let right = submit(Some("correct horse battery")).await.unwrap();

    // Assert: `login_hint` alone shows the page (no code), which asks for the password; only
    // the right one gets a code.
    assert_eq!(hinted.status(), 200);
    assert!(hinted
        .text()
        .await
        .unwrap()
        .contains("<input type=password name=password required>"));
    assert_eq!(without.status(), 401);
    assert_eq!(wrong.status(), 401);
    assert!(right.status().is_redirection(), "{}", right.status());
    let location = right.headers()["location"].to_str().unwrap();
    assert!(
        location.starts_with("http://127.0.0.1:9/cb?code="),
        "{location}"
    );
}
