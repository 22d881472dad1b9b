//! Tests of the facade's callback.
use super::*;
use crate::oauth::keys::PENDING_TTL_SECS;

fn key() -> CallbackKey {
    CallbackKey::from_bytes(&[7u8; 32])
}

fn pending(expires: u64) -> Pending {
    Pending {
        redirect_uri: "http://127.0.0.1:9/cb".into(),
        state: Some("client-state".into()),
        expires,
        browser: Some(browser_secret().1),
    }
}

#[test]
fn a_sealed_state_opens_until_it_expires() {
    let p = pending(1000);
    let sealed = key().seal(&p);
    assert_eq!(key().open(&sealed, 1000), Ok(p));
    assert_eq!(key().open(&sealed, 1001), Err(CallbackError::Expired));
}

#[test]
fn an_altered_or_foreign_state_is_refused() {
    let sealed = key().seal(&pending(1000));
    let (body, tag) = sealed.split_once('.').unwrap();
    // Another redirect URI with the old tag.
    let mut other = pending(1000);
    other.redirect_uri = "https://evil.example/cb".into();
    let forged = format!(
        "{}.{tag}",
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(&other).unwrap())
    );
    assert_eq!(key().open(&forged, 0), Err(CallbackError::Forged));
    let foreign = CallbackKey::from_bytes(&[8u8; 32]).seal(&pending(1000));
    assert_eq!(key().open(&foreign, 0), Err(CallbackError::Forged));
    assert_eq!(key().open(body, 0), Err(CallbackError::Forged));
    assert_eq!(key().open("client-state", 0), Err(CallbackError::Forged));
}

#[test]
fn a_state_opens_only_in_the_browser_that_holds_its_cookie() {
    let (secret, binding) = browser_secret();
    let p = Pending {
        browser: Some(binding.clone()),
        ..pending(1000)
    };
    let name = p.cookie_name().unwrap();
    assert!(name.starts_with("loanhost_signin_") && binding.starts_with(&name[16..]));
    let cookie = format!("other=1; {name}={secret}");
    assert!(p.same_browser([cookie.as_str()].into_iter()));
    let (another, _) = browser_secret();
    let wrong = format!("{name}={another}");
    assert!(!p.same_browser([wrong.as_str()].into_iter()));
    assert!(!p.same_browser(std::iter::empty()));
    let set = set_cookie(&name, &secret, PENDING_TTL_SECS, true);
    assert!(set.contains("Path=/authorize/callback; Max-Age=600; HttpOnly; SameSite=Lax; Secure"));
}

#[test]
fn a_code_is_the_idps_code_encrypted_and_opens_only_with_its_redirect_uri() {
    let bound = key().bind_code("idp-code", "http://127.0.0.1:9/cb");
    assert!(bound.starts_with("lhc2."));
    assert!(
        !bound.contains(&URL_SAFE_NO_PAD.encode("idp-code")),
        "the IdP's code is not readable in it"
    );
    assert_ne!(bound, key().bind_code("idp-code", "http://127.0.0.1:9/cb"));
    assert_eq!(
        key().unbind_code(&bound, "http://127.0.0.1:9/cb"),
        Ok("idp-code".into())
    );
    assert_eq!(
        key().unbind_code(&bound, "http://127.0.0.1:10/cb"),
        Err(CallbackError::OtherRedirect)
    );
    assert_eq!(
        CallbackKey::from_bytes(&[8u8; 32]).unbind_code(&bound, "http://127.0.0.1:9/cb"),
        Err(CallbackError::OtherRedirect)
    );
    assert_eq!(
        key().unbind_code("plain-code", "x"),
        Err(CallbackError::Unbound)
    );
    assert_eq!(
        key().unbind_code("lhc2.bm9wZQ", "x"),
        Err(CallbackError::Forged)
    );
}

#[test]
fn loopback_http_redirects_are_allowed_on_any_port_others_only_when_listed_for_the_client() {
    let listed = vec![
        AllowedRedirect::parse("claude=https://claude.ai/api/mcp/auth_callback"),
        AllowedRedirect::parse("https://any.example/cb?a=b"),
    ];
    let cb = "https://lh.example/authorize/callback";
    for (ok, client) in [
        ("http://127.0.0.1:33418/callback", "x"),
        ("http://localhost:9/cb", "x"),
        ("http://[::1]:8000/", "x"),
        ("https://claude.ai/api/mcp/auth_callback", "claude"),
        ("https://any.example/cb?a=b", "x"),
    ] {
        assert_eq!(redirect_allowed(ok, client, &listed, cb), Ok(()), "{ok}");
    }
    for (no, client, why) in [
        (
            "https://claude.ai/api/mcp/auth_callback",
            "other",
            "listed for this client",
        ),
        ("https://evil.example/cb", "x", "listed"),
        (
            "https://claude.ai/api/mcp/auth_callback/x",
            "claude",
            "listed",
        ),
        ("https://127.0.0.1/cb", "x", "listed"),
        ("http://127.0.0.1.evil.example/cb", "x", "listed"),
        ("http://user@127.0.0.1/cb", "x", "user information"),
        ("http://:secret@127.0.0.1:9/cb", "x", "user information"),
        ("http://LocalHost:9/cb", "x", "canonical"),
        ("http://127.0.0.1:09/cb", "x", "canonical"),
        ("http://127.0.0.1/cb#frag", "x", "fragment"),
        ("http://127.0.0.1:9/cb?code=planted&state=s", "x", "`code`"),
        ("http://127.0.0.1:9/cb?iss=x", "x", "`iss`"),
        (
            "https://lh.example/authorize/callback",
            "x",
            "own authorization callback",
        ),
        (
            "https://lh.example/authorize/callback?x=1",
            "x",
            "own authorization callback",
        ),
        ("javascript:alert(1)", "x", "listed"),
        ("not a url", "x", "not an absolute URL"),
    ] {
        let e = redirect_allowed(no, client, &listed, cb).unwrap_err();
        assert!(e.contains(why), "{no}: {e}");
    }
}

#[test]
fn the_token_form_gets_the_idps_code_and_the_callback_and_refuses_other_codes() {
    let k = key();
    let bound = k.bind_code("idp-code", "http://127.0.0.1:9/cb");
    let body = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("grant_type", "authorization_code")
        .append_pair("client_id", "c")
        .append_pair("code", &bound)
        .append_pair("code_verifier", "v")
        .append_pair("redirect_uri", "http://127.0.0.1:9/cb")
        .finish();
    let out = rewrite_token_form(&k, body.as_bytes(), "https://lh/authorize/callback")
        .unwrap()
        .unwrap();
    assert_eq!(
        out,
        "grant_type=authorization_code&client_id=c&code=idp-code&code_verifier=v&redirect_uri=https%3A%2F%2Flh%2Fauthorize%2Fcallback"
    );
    let other = body.replace("%3A9%2F", "%3A10%2F");
    assert_eq!(
        rewrite_token_form(&k, other.as_bytes(), "cb"),
        Err(CallbackError::OtherRedirect)
    );
    let refresh = b"grant_type=refresh_token&refresh_token=r";
    assert_eq!(rewrite_token_form(&k, refresh, "cb"), Ok(None));
    let unbound = b"grant_type=authorization_code&code=plain&redirect_uri=x";
    assert_eq!(
        rewrite_token_form(&k, unbound, "cb"),
        Err(CallbackError::Unbound)
    );
    let none = b"grant_type=authorization_code&redirect_uri=x";
    assert_eq!(
        rewrite_token_form(&k, none, "cb"),
        Err(CallbackError::Unbound)
    );
}
