//! The dev IdP behind a public URL: nothing about the demo users before the password, a pass
//! the password earns to pick one, guessers locked out (and logged) per client, and codes
//! sent only to loopback or registered redirect URIs.

use crate::helpers::{spawn_app_with, AppOptions, TestApp};

const REQUEST: &str = "response_type=code&client_id=loanhost-demo&state=s1&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256";
const LOOPBACK: &str = "http%3A%2F%2F127.0.0.1%3A9%2Fcb";

async fn with_password() -> TestApp {
    let mut options = AppOptions::default();
    options
        .env
        .push(("LOANHOST_DEV_IDP_PASSWORD", "correct horse battery".into()));
    spawn_app_with(options).await
}

/// Posts the sign-in form `fields` (after the request's own) as the client `forwarded_for`
/// (through a proxy on loopback), or as the test's own address.
async fn submit(app: &TestApp, fields: &str, forwarded_for: Option<&str>) -> reqwest::Response {
    let mut request = app
        .client
        .post(format!("{}/dev-idp/authorize", app.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("{REQUEST}&redirect_uri={LOOPBACK}&{fields}"));
    if let Some(ip) = forwarded_for {
        request = request.header("x-forwarded-for", ip);
    }
    request.send().await.unwrap()
}

#[tokio::test]
async fn the_dev_idps_password_guard_shows_nothing_before_the_password_and_locks_out_guessers() {
    // Arrange
    let app = with_password().await;

    // Act: the page, asked with a login hint; the password alone; then the user picked with
    // the pass it earned.
    let page = app
        .client
        .get(format!(
            "{}/dev-idp/authorize?{REQUEST}&redirect_uri={LOOPBACK}&login_hint=agent%40example.com",
            app.base
        ))
        .send()
        .await
        .unwrap();
    let (page_status, page) = (page.status(), page.text().await.unwrap());
    let picker = submit(&app, "password=correct+horse+battery", Some("198.51.100.9")).await;
    let (picker_status, picker) = (picker.status(), picker.text().await.unwrap());
    let pass = picker
        .split("name=pass value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a pass in the picker")
        .to_string();
    let signed_in = submit(
        &app,
        &format!("pass={pass}&email=agent%40example.com"),
        None,
    )
    .await;
    let replayed = submit(
        &app,
        &format!("pass={pass}&email=agent%40example.com"),
        None,
    )
    .await;
    let forged = submit(
        &app,
        "pass=forged&email=agent%40example.com",
        Some("198.51.100.10"),
    )
    .await;

    // Act: one client guesses past its allowance, then gives the right password.
    let guesser = Some("203.0.113.7");
    let mut guesses = Vec::new();
    for n in 0..5 {
        let r = submit(
            &app,
            &format!("password=guess-{n}&email=agent%40example.com"),
            guesser,
        )
        .await;
        guesses.push(r.status().as_u16());
    }
    let locked = submit(
        &app,
        "password=correct+horse+battery&email=agent%40example.com",
        guesser,
    )
    .await;
    let other = submit(
        &app,
        "password=correct+horse+battery&email=agent%40example.com",
        Some("192.0.2.44"),
    )
    .await;

    // Assert: the first page asks for the password and names nobody.
    assert_eq!(page_status, 200);
    assert!(
        page.contains("<input type=password name=password required>"),
        "{page}"
    );
    assert!(!page.contains("@example.com"), "{page}");
    assert!(!page.contains("name=email"), "{page}");
    // The password shows the users; the pass signs one in, once.
    assert_eq!(picker_status, 200);
    assert!(picker.contains("admin@example.com"), "{picker}");
    assert!(
        signed_in.status().is_redirection(),
        "{}",
        signed_in.status()
    );
    assert!(signed_in.headers()["location"]
        .to_str()
        .unwrap()
        .starts_with("http://127.0.0.1:9/cb?code="));
    assert_eq!(replayed.status(), 401, "a pass is good once");
    assert_eq!(forged.status(), 401);
    // The guesser is refused five times, then locked out even with the right password.
    assert_eq!(guesses, vec![401; 5]);
    assert_eq!(locked.status(), 429);
    assert!(locked.headers().contains_key("retry-after"));
    assert!(other.status().is_redirection(), "{}", other.status());
}

#[tokio::test]
async fn the_dev_idp_sends_codes_only_to_registered_or_loopback_redirect_uris() {
    // Arrange: a hosted client's redirect URI registered.
    let mut options = AppOptions::default();
    let hosted = "https://claude.ai/api/mcp/auth_callback";
    options
        .env
        .push(("LOANHOST_AUTHORIZE_REDIRECT_URIS", hosted.to_string()));
    let app = spawn_app_with(options).await;
    let sign_in = |redirect: String| {
        let url = format!(
            "{}/dev-idp/authorize?{REQUEST}&redirect_uri={}&login_hint=agent%40example.com",
            app.base,
            url::form_urlencoded::byte_serialize(redirect.as_bytes()).collect::<String>()
        );
        let client = app.client.clone();
        async move { client.get(url).send().await.unwrap() }
    };

    // Act
    let loopback = sign_in("http://127.0.0.1:9/cb".into()).await;
    let registered = sign_in(hosted.into()).await;
    let callback = sign_in(format!("{}/authorize/callback", app.base)).await;
    let elsewhere = sign_in("https://evil.example/cb".into()).await;
    let lookalike = sign_in("https://claude.ai/api/mcp/auth_callback/../x".into()).await;

    // Assert
    for r in [&loopback, &registered, &callback] {
        assert!(r.status().is_redirection(), "{}", r.status());
    }
    assert!(registered.headers()["location"]
        .to_str()
        .unwrap()
        .starts_with(&format!("{hosted}?code=")));
    for r in [elsewhere, lookalike] {
        assert_eq!(r.status(), 400);
        let page = r.text().await.unwrap();
        assert!(
            page.contains("is not registered for loanhost-demo"),
            "{page}"
        );
    }
}
