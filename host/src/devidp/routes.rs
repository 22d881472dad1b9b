//! HTTP endpoints of the dev IdP: discovery, JWKS, authorize (sign-in page), token.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::{Form, Json, Router};
use base64::Engine as _;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::{
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
fn check_request(p: &Params) -> Result<(), String> {
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
    if get("code_challenge").is_empty() || get("code_challenge_method") != "S256" {
        return Err("PKCE with code_challenge_method=S256 is required".into());
    }
    Ok(())
}

async fn authorize_page(State(idp): State<Arc<DevIdp>>, Query(p): Query<Params>) -> Response {
    if let Err(e) = check_request(&p) {
        return (
            StatusCode::BAD_REQUEST,
            Html(format!("<h1>Bad request</h1><p>{}</p>", escape(&e))),
        )
            .into_response();
    }
    // Non-interactive sign-in for scripts: `login_hint=<email>`, only without a password.
    if let Some(email) = p.get("login_hint").filter(|e| !e.is_empty()) {
        if idp.password.is_none() {
            return issue_code(&idp, &p, email).await;
        }
    }
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
    let hidden: String = p
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "login_hint" | "password"))
        .map(|(k, v)| {
            format!(
                "<input type=hidden name=\"{}\" value=\"{}\">",
                escape(k),
                escape(v)
            )
        })
        .collect();
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
    let password = if idp.password.is_some() {
        "<p><label>Password <input type=password name=password required></label></p>"
    } else {
        ""
    };
    Html(format!(
        "<!doctype html><title>loanhost dev sign-in</title><h1>Sign in as a demo user</h1>\
         <p>Development identity provider: pick a platform agent.</p>{empty}\
         <form method=post action=\"{}/authorize\">{hidden}<ul>{options}</ul>{password}<button>Sign in</button></form>",
        escape(&idp.issuer)
    ))
    .into_response()
}

async fn authorize_submit(State(idp): State<Arc<DevIdp>>, Form(p): Form<Params>) -> Response {
    if let Err(e) = check_request(&p) {
        return (
            StatusCode::BAD_REQUEST,
            Html(format!("<p>{}</p>", escape(&e))),
        )
            .into_response();
    }
    if let Some(password) = &idp.password {
        if !password.matches(p.get("password").map(String::as_str).unwrap_or("")) {
            return (
                StatusCode::UNAUTHORIZED,
                Html("<p>wrong password: go back and try again</p>".to_string()),
            )
                .into_response();
        }
    }
    match p.get("email").filter(|e| !e.is_empty()) {
        Some(email) => issue_code(&idp, &p, email).await,
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
