//! HTTP endpoints of the dev IdP: discovery, JWKS, authorize (sign-in page), token.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{ConnectInfo, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::{Extension, Form, Json, Router};
use base64::Engine as _;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::guard::Refusal;
use super::state::{
    random_token, DevIdp, Grant, Refresh, CLIENT_ID, CLIENT_SECRET, CODE_TTL, REFRESH_TTL,
};

/// Routes, to be nested under `/dev-idp`.
pub fn router(idp: Arc<DevIdp>) -> Router {
    Router::new()
        .route("/.well-known/openid-configuration", get(discovery))
        .route("/jwks", get(jwks))
        .route("/authorize", get(authorize_page).post(authorize_submit))
        .route("/token", axum::routing::post(token))
        .with_state(idp)
}

async fn discovery(State(idp): State<Arc<DevIdp>>) -> Json<serde_json::Value> {
    Json(json!({
        "issuer": idp.issuer,
        "authorization_endpoint": format!("{}/authorize", idp.issuer),
        "token_endpoint": format!("{}/token", idp.issuer),
        "jwks_uri": format!("{}/jwks", idp.issuer),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "subject_types_supported": ["public"],
    }))
}

async fn jwks(State(idp): State<Arc<DevIdp>>) -> Json<jsonwebtoken::jwk::JwkSet> {
    Json(idp.jwks())
}

type Params = HashMap<String, String>;

/// Checks the authorization request; returns the error text for the page.
fn check_request(idp: &DevIdp, p: &Params) -> Result<(), String> {
    let get = |k: &str| p.get(k).map(String::as_str).unwrap_or("");
    if get("client_id") != CLIENT_ID {
        return Err(format!(
            "unknown client_id `{}` (the demo client is `{CLIENT_ID}`)",
            get("client_id")
        ));
    }
    if get("response_type") != "code" {
        return Err("response_type must be `code`".into());
    }
    let redirect = get("redirect_uri");
    if !(redirect.starts_with("http://") || redirect.starts_with("https://")) {
        return Err("redirect_uri must be an http(s) URL".into());
    }
    if !idp.redirect_allowed(redirect) {
        return Err(format!(
            "redirect_uri `{redirect}` is not registered for {CLIENT_ID}: use a loopback URI \
             (http://127.0.0.1:<port>/…), this server's own callback, or one listed in \
             LOANHOST_AUTHORIZE_REDIRECT_URIS"
        ));
    }
    if get("code_challenge").is_empty() || get("code_challenge_method") != "S256" {
        return Err("PKCE with code_challenge_method=S256 is required".into());
    }
    Ok(())
}

/// A page saying what is wrong with the request.
fn bad_request(e: &str) -> Response {
    (
        StatusCode::BAD_REQUEST,
        Html(format!("<h1>Bad request</h1><p>{}</p>", escape(e))),
    )
        .into_response()
}

/// The request's parameters as hidden fields, but for the ones the form asks for itself.
fn hidden_fields(p: &Params) -> String {
    p.iter()
        .filter(|(k, _)| !matches!(k.as_str(), "login_hint" | "password" | "pass" | "email"))
        .map(|(k, v)| {
            format!(
                "<input type=hidden name=\"{}\" value=\"{}\">",
                escape(k),
                escape(v)
            )
        })
        .collect()
}

/// The sign-in page behind a password: the password field, and nothing about the demo users.
fn password_page(idp: &DevIdp, p: &Params) -> Response {
    Html(format!(
        "<!doctype html><title>loanhost dev sign-in</title><h1>Sign in</h1>\
         <p>Development identity provider: this server asks for its sign-in password first.</p>\
         <form method=post action=\"{}/authorize\">{}\
         <p><label>Password <input type=password name=password required></label></p>\
         <button>Continue</button></form>",
        escape(&idp.issuer),
        hidden_fields(p)
    ))
    .into_response()
}

/// The pick-a-demo-user page; behind a password it carries the `pass` the password earned.
async fn picker_page(idp: &DevIdp, p: &Params, pass: Option<&str>) -> Response {
    let agents = match idp.db.list_agents(200).await {
        Ok(a) => a,
        Err(e) => {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                Html(format!("<p>{}</p>", escape(&e.to_string()))),
            )
                .into_response()
        }
    };
    let options: String = agents
        .iter()
        .map(|(email, name, roles)| {
            format!(
                "<li><label><input type=radio name=email value=\"{}\" required> {} &lt;{}&gt; <small>{}</small></label></li>",
                escape(email),
                escape(name),
                escape(email),
                escape(&roles.join(", "))
            )
        })
        .collect();
    let empty = if agents.is_empty() {
        "<p>No platform agents yet: import or seed data first.</p>"
    } else {
        ""
    };
    let pass = pass
        .map(|t| format!("<input type=hidden name=pass value=\"{}\">", escape(t)))
        .unwrap_or_default();
    Html(format!(
        "<!doctype html><title>loanhost dev sign-in</title><h1>Sign in as a demo user</h1>\
         <p>Development identity provider: pick a platform agent.</p>{empty}\
         <form method=post action=\"{}/authorize\">{}{pass}<ul>{options}</ul><button>Sign in</button></form>",
        escape(&idp.issuer),
        hidden_fields(p)
    ))
    .into_response()
}

async fn authorize_page(State(idp): State<Arc<DevIdp>>, Query(p): Query<Params>) -> Response {
    if let Err(e) = check_request(&idp, &p) {
        return bad_request(&e);
    }
    if idp.password.is_some() {
        // Nothing about the demo users before the password, `login_hint` or not.
        return password_page(&idp, &p);
    }
    // Non-interactive sign-in for scripts: `login_hint=<email>`, only without a password.
    if let Some(email) = p.get("login_hint").filter(|e| !e.is_empty()) {
        return issue_code(&idp, &p, email).await;
    }
    picker_page(&idp, &p, None).await
}

/// The client a guess is counted against: the peer's address, or, from a proxy on this
/// machine (a tunnel), the first address it forwards for. Guesses from every client are
/// also counted together, so forging that header gains nothing.
fn client_of_guess(peer: Option<SocketAddr>, headers: &HeaderMap) -> IpAddr {
    let peer = peer.map(|a| a.ip()).unwrap_or(IpAddr::from([0, 0, 0, 0]));
    let forwarded = headers
        .get("x-forwarded-for")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(',').next())
        .and_then(|v| v.trim().parse::<IpAddr>().ok());
    match forwarded {
        Some(ip) if peer.is_loopback() => ip,
        _ => peer,
    }
}

async fn authorize_submit(
    State(idp): State<Arc<DevIdp>>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
    Form(p): Form<Params>,
) -> Response {
    if let Err(e) = check_request(&idp, &p) {
        return bad_request(&e);
    }
    let email = p.get("email").filter(|e| !e.is_empty());
    let mut pass = None;
    if let Some(password) = &idp.password {
        let passed = p
            .get("pass")
            .is_some_and(|t| idp.guard.has_pass(t, email.is_some()));
        if !passed {
            let given = p.get("password").map(String::as_str).unwrap_or("");
            let client = client_of_guess(peer.map(|Extension(ConnectInfo(a))| a), &headers);
            match idp.guard.guess(client, password.matches(given)) {
                Ok(()) => {}
                Err(Refusal::Wrong) => {
                    return (
                        StatusCode::UNAUTHORIZED,
                        Html("<p>wrong password: go back and try again</p>".to_string()),
                    )
                        .into_response()
                }
                Err(Refusal::Locked(wait)) => {
                    let mut r = (
                        StatusCode::TOO_MANY_REQUESTS,
                        Html("<p>too many wrong passwords: try again later</p>".to_string()),
                    )
                        .into_response();
                    if let Ok(v) = header::HeaderValue::from_str(&wait.as_secs().max(1).to_string())
                    {
                        r.headers_mut().insert(header::RETRY_AFTER, v);
                    }
                    return r;
                }
            }
            if email.is_none() {
                pass = idp.guard.issue_pass(random_token());
                if pass.is_none() {
                    return (
                        StatusCode::TOO_MANY_REQUESTS,
                        Html("<p>too many sign-ins under way: try again later</p>".to_string()),
                    )
                        .into_response();
                }
            }
        }
    }
    match email {
        Some(email) => issue_code(&idp, &p, email).await,
        None if idp.password.is_some() => picker_page(&idp, &p, pass.as_deref()).await,
        None => (
            StatusCode::BAD_REQUEST,
            Html("<p>pick a user</p>".to_string()),
        )
            .into_response(),
    }
}

async fn issue_code(idp: &DevIdp, p: &Params, email: &str) -> Response {
    let get = |k: &str| p.get(k).cloned().unwrap_or_default();
    let code = random_token();
    idp.codes.lock().expect("codes lock").insert(
        code.clone(),
        Grant {
            email: email.to_string(),
            client_id: get("client_id"),
            redirect_uri: get("redirect_uri"),
            code_challenge: get("code_challenge"),
            scope: get("scope"),
            audience: p
                .get("audience")
                .cloned()
                .unwrap_or_else(|| idp.audience.clone()),
            expires: Instant::now() + CODE_TTL,
        },
    );
    let mut target = match url::Url::parse(&get("redirect_uri")) {
        Ok(u) => u,
        Err(_) => return (StatusCode::BAD_REQUEST, "bad redirect_uri").into_response(),
    };
    target.query_pairs_mut().append_pair("code", &code);
    if let Some(state) = p.get("state") {
        target.query_pairs_mut().append_pair("state", state);
    }
    Redirect::to(target.as_str()).into_response()
}

fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    let mut resp = (
        status,
        Json(json!({"error": error, "error_description": description})),
    )
        .into_response();
    resp.headers_mut().insert(
        header::CACHE_CONTROL,
        "no-store".parse().expect("static header"),
    );
    if status == StatusCode::UNAUTHORIZED {
        resp.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            "Basic realm=\"dev-idp\"".parse().expect("static header"),
        );
    }
    resp
}

/// Client authentication: `client_secret_basic` or `client_secret_post`.
fn client_of(headers: &HeaderMap, p: &Params) -> Option<String> {
    let basic = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Basic ")
                .or_else(|| v.strip_prefix("basic "))
        })
        .and_then(|b| {
            base64::engine::general_purpose::STANDARD
                .decode(b.trim())
                .ok()
        })
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|s| {
            let (id, secret) = s.split_once(':')?;
            let dec = |x: &str| {
                url::form_urlencoded::parse(format!("x={x}").as_bytes())
                    .next()
                    .map(|(_, v)| v.into_owned())
            };
            Some((dec(id)?, dec(secret)?))
        });
    let (id, secret) = match basic {
        Some(pair) => pair,
        None => (
            p.get("client_id").cloned().unwrap_or_default(),
            p.get("client_secret").cloned().unwrap_or_default(),
        ),
    };
    (id == CLIENT_ID && secret == CLIENT_SECRET).then_some(id)
}

async fn token(
    State(idp): State<Arc<DevIdp>>,
    headers: HeaderMap,
    Form(p): Form<Params>,
) -> Response {
    let Some(client) = client_of(&headers, &p) else {
        return oauth_error(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            "client authentication failed",
        );
    };
    let get = |k: &str| p.get(k).map(String::as_str).unwrap_or("");
    let (email, scope, audience) = match get("grant_type") {
        "authorization_code" => {
            let grant = idp.codes.lock().expect("codes lock").remove(get("code"));
            let Some(g) = grant.filter(|g| g.expires > Instant::now()) else {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "unknown or expired code",
                );
            };
            if g.client_id != client || g.redirect_uri != get("redirect_uri") {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "client or redirect_uri mismatch",
                );
            }
            let verifier = get("code_verifier");
            let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(Sha256::digest(verifier.as_bytes()));
            if verifier.is_empty() || challenge != g.code_challenge {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "PKCE verification failed",
                );
            }
            (g.email, g.scope, g.audience)
        }
        "refresh_token" => {
            let old = idp
                .refresh
                .lock()
                .expect("refresh lock")
                .remove(get("refresh_token"));
            let Some(r) = old.filter(|r| r.expires > Instant::now() && r.client_id == client)
            else {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "unknown or expired refresh token",
                );
            };
            (r.email, r.scope, r.audience)
        }
        other => {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
                &format!("grant_type `{other}` is not supported"),
            )
        }
    };
    let access = match idp.mint(&email, &audience, &scope) {
        Ok(t) => t,
        Err(e) => return oauth_error(StatusCode::INTERNAL_SERVER_ERROR, "server_error", &e),
    };
    let mut body = json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": idp.token_ttl.as_secs(),
        "scope": scope,
    });
    if scope.split(' ').any(|s| s == "offline_access") {
        let refresh = random_token();
        idp.refresh.lock().expect("refresh lock").insert(
            refresh.clone(),
            Refresh {
                email,
                client_id: client,
                scope,
                audience,
                expires: Instant::now() + REFRESH_TTL,
            },
        );
        body["refresh_token"] = json!(refresh);
    }
    let mut resp = Json(body).into_response();
    resp.headers_mut().insert(
        header::CACHE_CONTROL,
        "no-store".parse().expect("static header"),
    );
    resp.headers_mut()
        .insert(header::PRAGMA, "no-cache".parse().expect("static header"));
    resp
}

/// Minimal HTML escaping for attribute and text content.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}
