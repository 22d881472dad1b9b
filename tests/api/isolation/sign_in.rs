//! Who may sign in: the email claim and its verified claim, look-alike addresses, deactivated
//! agents, repeated authorize parameters, and the dev IdP's guards.

use serde_json::{json, Value};

use crate::helpers::{spawn_app, spawn_app_with, AppOptions, TestApp};

pub(super) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Claims of a valid token for `email` from the app's dev IdP.
pub(super) fn claims_for(app: &TestApp, email: &str) -> Value {
    json!({
        "iss": format!("{}/dev-idp", app.base),
        "aud": "https://loanhost.local/mcp",
        "email": email,
        "iat": now(),
        "exp": now() + 300,
    })
}

pub(super) async fn status_of(app: &TestApp, token: &str) -> u16 {
    app.client
        .post(format!("{}/mcp", app.base))
        .bearer_auth(token)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn an_unverified_email_is_refused() {
    // Arrange
    let app = spawn_app().await;
    let with = |verified: Value| {
        let mut c = claims_for(&app, "admin@example.com");
        if !verified.is_null() {
            c["email_verified"] = verified;
        }
        app.key.sign(&c).unwrap()
    };

    // Act
    let verified = status_of(&app, &with(json!(true))).await;
    let unverified = status_of(&app, &with(json!(false))).await;
    let unverified_text = status_of(&app, &with(json!("false"))).await;
    let absent = status_of(&app, &with(Value::Null)).await;

    // Assert
    assert_eq!(
        (verified, unverified, unverified_text, absent),
        (200, 401, 401, 200)
    );
}

#[tokio::test]
async fn the_verified_claim_is_the_one_paired_with_the_email_used() {
    // Arrange: the email comes from the namespaced claim (no plain `email`); its own
    // `_verified` claim says false, while a plain `email_verified: true` stands beside it.
    let app = spawn_app().await;
    let ns = "https://loanhost.local";
    let token = |own: Value, plain: Value| {
        let mut c = claims_for(&app, "admin@example.com");
        let email = c.as_object_mut().unwrap().remove("email").unwrap();
        c[format!("{ns}/email")] = email;
        if !own.is_null() {
            c[format!("{ns}/email_verified")] = own;
        }
        if !plain.is_null() {
            c["email_verified"] = plain;
        }
        app.key.sign(&c).unwrap()
    };

    // Act
    let own_false = status_of(&app, &token(json!(false), json!(true))).await;
    let own_true = status_of(&app, &token(json!(true), json!(false))).await;
    let own_absent = status_of(&app, &token(Value::Null, json!(false))).await;

    // Assert: only the namespaced email's own claim counts.
    assert_eq!((own_false, own_true, own_absent), (401, 200, 200));
}

#[tokio::test]
async fn the_email_verified_claim_can_be_required() {
    // Arrange
    let mut options = AppOptions::default();
    options
        .env
        .push(("LOANHOST_REQUIRE_EMAIL_VERIFIED", "true".into()));
    let app = spawn_app_with(options).await;
    let mut verified = claims_for(&app, "admin@example.com");
    verified["email_verified"] = json!(true);

    // Act
    let absent = status_of(
        &app,
        &app.key
            .sign(&claims_for(&app, "admin@example.com"))
            .unwrap(),
    )
    .await;
    let present = status_of(&app, &app.key.sign(&verified).unwrap()).await;

    // Assert
    assert_eq!((absent, present), (401, 200));
}

#[tokio::test]
async fn a_non_ascii_look_alike_email_does_not_resolve() {
    // Arrange: the agent is `kim@example.com`; the IdP vouches for `\u{212A}im@example.com`
    // (KELVIN SIGN, which full Unicode case folding turns into `k`).
    let app = spawn_app().await;
    app.db
        .upsert_agent(&loanhost::data::NewAgent {
            id: "00000000-0000-0000-0000-0000000000e5".into(),
            email: "kim@example.com".into(),
            roles: vec!["Admin".into()],
            ..Default::default()
        })
        .await
        .unwrap();

    // Act
    let real = status_of(&app, &app.token_for("KIM@Example.com")).await;
    let look_alike = status_of(&app, &app.token_for("\u{212A}im@example.com")).await;

    // Assert
    assert_eq!(real, 200, "ASCII case still folds");
    assert_eq!(look_alike, 401, "a look-alike must not sign in as kim");
}

#[tokio::test]
async fn a_deactivated_agent_no_longer_signs_in() {
    // Arrange
    let app = spawn_app().await;
    let token = app.bearer("agent-token");
    let before = status_of(&app, &token).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("agents.jsonl"),
        r#"{"id":"00000000-0000-0000-0000-0000000000b2","email":"Agent@Example.com","roles":["Agent"],"managedAgentIds":[],"active":false}
"#,
    )
    .unwrap();

    // Act
    loanhost::data::import::import_dir(&app.db, dir.path(), |_, _| {})
        .await
        .unwrap();
    let after = status_of(&app, &token).await;

    // Assert
    assert_eq!((before, after), (200, 401));
}

#[tokio::test]
async fn the_last_line_of_an_agent_wins_whole() {
    // Arrange: two lines for one agent; the second takes Admin away.
    let app = spawn_app().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("agents.jsonl"),
        concat!(
            r#"{"id":"00000000-0000-0000-0000-0000000000f6","email":"twice@example.com","roles":["Admin"],"managedAgentIds":[]}"#,
            "\n",
            r#"{"id":"00000000-0000-0000-0000-0000000000f6","email":"twice@example.com","roles":["Agent"],"managedAgentIds":[]}"#,
            "\n"
        ),
    )
    .unwrap();

    // Act
    loanhost::data::import::import_dir(&app.db, dir.path(), |_, _| {})
        .await
        .unwrap();
    let agent = app.db.agent_by_email("twice@example.com").await.unwrap();

    // Assert
    assert_eq!(agent.unwrap().roles, vec!["Agent"]);
}

#[tokio::test]
async fn repeated_authorize_parameters_are_refused() {
    // Arrange
    let app = spawn_app().await;
    let query =
        "response_type=code&client_id=loanhost-demo&code_challenge=abc&code_challenge_method=S256\
                 &redirect_uri=http://127.0.0.1:9/cb&redirect_uri=http://evil.example/cb";

    // Act
    let resp = app
        .client
        .get(format!("{}/authorize?{query}", app.base))
        .send()
        .await
        .unwrap();

    // Assert
    assert_eq!(resp.status(), 400);
    assert!(resp.headers().get("location").is_none());
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"], "invalid_request");
    assert_eq!(
        body["error_description"],
        "parameter \"redirect_uri\" is repeated; each may appear once"
    );
}

#[test]
fn the_dev_idp_refuses_a_public_address_or_https() {
    // Arrange
    let with = |pairs: &[(&str, &str)]| {
        loanhost::config::Config::from_map(
            &pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    };

    // Act
    let public = with(&[
        ("LOANHOST_DEV_IDP", "true"),
        ("LOANHOST_LISTEN", "0.0.0.0:8080"),
    ]);
    let https = with(&[
        ("LOANHOST_DEV_IDP", "true"),
        ("LOANHOST_BASE_URL", "https://loans.example.com"),
    ]);
    let other_idp = with(&[
        ("LOANHOST_DEV_IDP", "true"),
        ("LOANHOST_IDP_ISSUER", "https://idp.example.com/"),
    ]);

    // Assert
    assert_eq!(
        public.unwrap_err().to_string(),
        "LOANHOST_DEV_IDP: the dev IdP signs in any demo user; it runs only on a loopback LOANHOST_LISTEN, not 0.0.0.0:8080"
    );
    assert_eq!(
        https.unwrap_err().to_string(),
        "LOANHOST_DEV_IDP: behind a public LOANHOST_BASE_URL (one whose host is not loopback, http:// or https://) the dev IdP signs in only with a password: set LOANHOST_DEV_IDP_PASSWORD (at least 12 characters), or use a real IdP (docs/clients.md)"
    );
    assert!(
        !other_idp.unwrap().dev_idp,
        "not mounted beside another IdP"
    );
}

#[tokio::test]
async fn the_dev_idp_is_not_mounted_beside_another_idp() {
    // Arrange
    let mut options = AppOptions::default();
    options
        .env
        .push(("LOANHOST_IDP_ISSUER", "https://idp.example.com/".into()));

    // Act
    let app = spawn_app_with(options).await;
    let jwks = app
        .client
        .get(format!("{}/dev-idp/jwks", app.base))
        .send()
        .await
        .unwrap();

    // Assert
    assert_eq!(jwks.status(), 404);
}
