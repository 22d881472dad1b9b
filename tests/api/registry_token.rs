//! A private registry that issues bearer tokens (distribution's token authentication, the
//! scheme of Docker Hub, GHCR, Harbor and Quay): the registry answers `401` with a `Bearer`
//! challenge, the client trades the auth file's credentials for a token at the token service,
//! and presents the token. `plugin push` and a following host both go through it; wrong
//! credentials are refused with a message that names none.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;

use crate::helpers::{free_port, spawn_app_with};
use crate::registry::{loanhost, Registry};
use crate::registry_follow::{follower, push_revision_with, revision, Release};

/// A token service on a loopback port: it checks basic credentials and signs ES256 tokens
/// with a certificate the registry trusts, granting what each `scope` asks.
struct TokenService {
    realm: String,
    /// The certificate the registry checks tokens against (PEM).
    certificate: String,
    /// Tokens issued, and requests refused for their credentials.
    issued: Arc<AtomicUsize>,
    refused: Arc<AtomicUsize>,
    _server: tokio::task::JoinHandle<()>,
}

const SERVICE: &str = "loanhost-test-registry";
const ISSUER: &str = "loanhost-test-token-service";

impl TokenService {
    async fn start(user: &'static str, password: &'static str) -> TokenService {
        use base64::Engine as _;
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["token-service".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let x5c = base64::engine::general_purpose::STANDARD.encode(cert.der());
        let signing =
            jsonwebtoken::EncodingKey::from_ec_pem(key.serialize_pem().as_bytes()).unwrap();
        let (issued, refused) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let expected = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
        );
        let (i, r) = (issued.clone(), refused.clone());
        let token = move |headers: axum::http::HeaderMap, uri: axum::http::Uri| {
            let (i, r, signing, x5c, expected) = (
                i.clone(),
                r.clone(),
                signing.clone(),
                x5c.clone(),
                expected.clone(),
            );
            async move {
                let given = headers.get("authorization").and_then(|v| v.to_str().ok());
                if given != Some(expected.as_str()) {
                    r.fetch_add(1, Ordering::SeqCst);
                    return (
                        axum::http::StatusCode::UNAUTHORIZED,
                        axum::Json(json!({"errors": [{"code": "UNAUTHORIZED"}]})),
                    );
                }
                // Every `scope=repository:<name>:<actions>` asked for is granted.
                let query = uri.query().unwrap_or("");
                let access: Vec<_> = url::form_urlencoded::parse(query.as_bytes())
                    .filter(|(k, _)| k == "scope")
                    .filter_map(|(_, v)| {
                        let mut parts = v.splitn(3, ':');
                        let (kind, name, actions) = (parts.next()?, parts.next()?, parts.next()?);
                        Some(json!({"type": kind, "name": name, "actions": actions.split(',').collect::<Vec<_>>()}))
                    })
                    .collect();
                let now = time::OffsetDateTime::now_utc().unix_timestamp();
                let claims = json!({"iss": ISSUER, "sub": user, "aud": SERVICE, "exp": now + 300,
                    "nbf": now - 10, "iat": now, "jti": format!("t{}", i.load(Ordering::SeqCst)), "access": access});
                let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
                header.x5c = Some(vec![x5c]);
                let jwt = jsonwebtoken::encode(&header, &claims, &signing).unwrap();
                i.fetch_add(1, Ordering::SeqCst);
                (
                    axum::http::StatusCode::OK,
                    axum::Json(json!({"token": jwt, "access_token": jwt, "expires_in": 300})),
                )
            }
        };
        let port = free_port();
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap();
        let app = axum::Router::new().route("/token", axum::routing::get(token));
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        TokenService {
            realm: format!("http://127.0.0.1:{port}/token"),
            certificate: cert.pem(),
            issued,
            refused,
            _server: server,
        }
    }
}

#[tokio::test]
async fn a_registry_that_issues_bearer_tokens_is_pushed_to_and_followed_with_the_auth_files_credentials(
) {
    // Arrange: a registry that accepts only tokens of the token service, which accepts only
    // `ci`'s password; auth files with the right and a wrong password.
    let tokens = TokenService::start("ci", "t0ken-pass").await;
    let (realm, certificate) = (tokens.realm.clone(), tokens.certificate.clone());
    let registry = Registry::start_with(false, move |dir| {
        std::fs::write(dir.join("token-ca.pem"), &certificate).unwrap();
        Some(format!(
            "auth:\n  token:\n    realm: {realm}\n    service: {SERVICE}\n    issuer: {ISSUER}\n    rootcertbundle: {}\n",
            dir.join("token-ca.pem").display()
        ))
    })
    .await;
    let live = registry.reference("team/revision:live");
    let auth_file = |file: &str, credentials: &str| {
        use base64::Engine as _;
        let encoded = base64::engine::general_purpose::STANDARD.encode(credentials);
        let path = registry.dir.path().join(file);
        let auths = json!({"auths": {registry.host.clone(): {"auth": encoded}}});
        std::fs::write(&path, auths.to_string()).unwrap();
        path.display().to_string()
    };
    let auth = auth_file("auth.json", "ci:t0ken-pass");
    let wrong = auth_file("wrong.json", "ci:not-the-pass");

    // Act: pushed with the wrong password, then with the right one; a host follows the tag.
    // The token service speaks plain HTTP on a loopback port of its own: listed beside the
    // registry, as an operator lists it (credentials go to no other plain-http realm).
    let token_origin = tokens
        .realm
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let plain_http = format!("{},{token_origin}", registry.host);
    let env = [("LOANHOST_REGISTRY_PLAIN_HTTP", plain_http.clone())];
    let mut with_wrong = env.to_vec();
    with_wrong.push(("LOANHOST_REGISTRY_AUTH_FILE", wrong));
    let fixture = tempfile::tempdir().unwrap();
    let (wasm, toml) = (
        fixture.path().join("revision.wasm"),
        fixture.path().join("revision.toml"),
    );
    std::fs::write(&wasm, crate::helpers::fixture_wasm("revision-a")).unwrap();
    std::fs::write(
        &toml,
        crate::helpers::manifest(
            "revision",
            crate::helpers::DEFAULT_ROLES,
            &["loans"],
            16,
            20_000,
            65536,
        ),
    )
    .unwrap();
    let files = [wasm.to_str().unwrap(), toml.to_str().unwrap()];
    let refused = loanhost(
        &["push", files[0], files[1], &live, "--unsigned"],
        &with_wrong,
    )
    .await;
    let with_auth = [
        ("LOANHOST_REGISTRY_AUTH_FILE", auth.clone()),
        ("LOANHOST_REGISTRY_PLAIN_HTTP", plain_http.clone()),
    ];
    let a = push_revision_with(
        &registry,
        "revision-a",
        &live,
        Release::Unsigned,
        &with_auth,
    )
    .await;
    let mut options = follower(&registry, &live, &fixture.path().join("cache"), true);
    options.env.push(("LOANHOST_REGISTRY_AUTH_FILE", auth));
    options
        .env
        .push(("LOANHOST_REGISTRY_PLAIN_HTTP", plain_http));
    let app = spawn_app_with(options).await;

    // Assert: the wrong password got no token and its message names no password; the right
    // one was traded for tokens, by the push and by the host, which serves the artifact.
    let (ok, _, why) = refused;
    assert!(!ok, "pushed with a wrong password");
    assert!(why.contains(&live), "{why}");
    assert!(
        !why.contains("t0ken-pass") && !why.contains("not-the-pass"),
        "{why}"
    );
    assert!(tokens.refused.load(Ordering::SeqCst) > 0);
    assert!(tokens.issued.load(Ordering::SeqCst) >= 2);
    assert_eq!(revision(&app).await.as_deref(), Some("a"));
    assert!(a.starts_with("sha256:"));
}
