//! The bare reference handler: bearer → RS256 verification (every request) → JSON-RPC body →
//! the answer loanhost gave, with its `id`. One source for both builds `hot_path` measures:
//! `loanhost-bare` (the system allocator) and the benchmark itself run as [`SPEC`] (linked
//! with loanhost's library, so with its allocator).

use std::sync::Arc;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use axum::Router;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;

/// The variable that makes a process the bare reference: `listen jwks-file answer-file issuer
/// audience`, separated by newlines.
pub const SPEC: &str = "HOT_PATH_BARE";

/// What the bare handler needs: the key, the expected issuer and audience, the answer.
struct Bare {
    key: DecodingKey,
    validation: Validation,
    answer: Value,
}

/// The reference: bearer → RS256 verification (every request) → JSON-RPC body → answer.
async fn bare_handler(
    State(bare): State<Arc<Bare>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let Some(token) = token else {
        return (axum::http::StatusCode::UNAUTHORIZED, "no token").into_response();
    };
    if jsonwebtoken::decode::<serde_json::Map<String, Value>>(token, &bare.key, &bare.validation)
        .is_err()
    {
        return (axum::http::StatusCode::UNAUTHORIZED, "bad token").into_response();
    }
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return (axum::http::StatusCode::BAD_REQUEST, "bad body").into_response();
    };
    let mut answer = bare.answer.clone();
    answer["id"] = request["id"].clone();
    axum::Json(answer).into_response()
}

/// Serves the bare reference as `spec` (see [`SPEC`]) says, until killed; a runtime of two
/// workers, as loanhost's on this machine.
pub fn serve(spec: &str) {
    let parts: Vec<&str> = spec.split('\n').collect();
    let [listen, jwks, answer, issuer, audience] = parts[..] else {
        panic!("{SPEC}: five lines expected, got {spec:?}");
    };
    let jwks: Value = serde_json::from_str(&std::fs::read_to_string(jwks).unwrap()).unwrap();
    let jwk: jsonwebtoken::jwk::Jwk = serde_json::from_value(jwks["keys"][0].clone()).unwrap();
    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_issuer(&[issuer]);
    validation.set_audience(&[audience]);
    let bare = Arc::new(Bare {
        key: DecodingKey::from_jwk(&jwk).unwrap(),
        validation,
        answer: serde_json::from_str(&std::fs::read_to_string(answer).unwrap()).unwrap(),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen).await.unwrap();
        let router = Router::new()
            .route("/mcp", post(bare_handler))
            .with_state(bare);
        axum::serve(listener, router).await.unwrap();
    });
}
