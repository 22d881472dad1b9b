//! The HTTP hot path, as throughput: authenticated `tools/call get_loan_reporting_metadata`
//! against loanhost (every check kept: the token, the agent, the budgets, a fresh instance,
//! the sealed audit line written to a file) and against a bare reference written here (axum + jsonwebtoken: verify the
//! RS256 bearer token on every request, parse the JSON-RPC body, answer the same bytes
//! loanhost answers), in the same run, on loopback, at 16 and 64 connections. The load
//! generator runs in this process and shares the machine's cores with the server, as the
//! figures in `docs/benchmarks.md` say. Prints requests per second and the ratio.
//!
//! `HOT_PATH_SECONDS` (default 8) is the measuring time of each run; `HOT_PATH_ONLY=loanhost`
//! (or `bare`) runs one side only, for profiling it; `HOT_PATH_CONNECTIONS` (default `16,64`)
//! sets the loads.

use std::sync::Arc;
use std::time::Duration;

mod common;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use axum::Router;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use loanhost::app::Application;
use loanhost::config::Config;
use loanhost::oauth::devidp::SigningKey;
use serde_json::{json, Value};

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

fn main() {
    let Some(seconds) = common::run_seconds("HOT_PATH_SECONDS") else {
        return;
    };
    let rt = common::runtime();
    let dir = tempfile::tempdir().unwrap();
    rt.block_on(async {
        // loanhost with the metadata plugin, a fresh SQLite database and one agent.
        let port = common::free_port();
        let plugins = common::plugins_dir(dir.path(), &["get_loan_reporting_metadata"]);
        let mut env = common::server_env(
            port,
            format!("sqlite://{}", dir.path().join("hot.db").display()),
            &plugins,
            &dir.path().join("cache"),
        );
        // Every check a user's server makes, the audit line included (to a file, sealed).
        env.insert(
            "LOANHOST_AUDIT_LOG".into(),
            dir.path().join("audit.jsonl").display().to_string(),
        );
        let config = Config::from_map(&env).unwrap();
        let (issuer, audience) = (config.idp.issuer.clone(), config.mcp_audience.clone());
        let key = SigningKey::load_or_create(&loanhost::app::dev_idp_key_path(&config)).unwrap();
        let app = Application::build(config).await.unwrap();
        app.db()
            .upsert_agent(&loanhost::data::NewAgent {
                id: "00000000-0000-0000-0000-0000000000b2".into(),
                email: "agent@example.com".into(),
                roles: vec!["Agent".into()],
                ..Default::default()
            })
            .await
            .unwrap();
        tokio::spawn(app.run_until_stopped());
        let token = key
            .mint(&issuer, "agent@example.com", &audience, "", Duration::from_secs(3600))
            .unwrap();
        let loanhost_url = format!("http://127.0.0.1:{port}/mcp");
        let client = reqwest::Client::new();
        common::wait_until_up(&client, &format!("http://127.0.0.1:{port}/health")).await;
        let answer = common::tools_call(&client, &loanhost_url, &token, "get_loan_reporting_metadata", json!({})).await;
        assert_eq!(answer["result"]["isError"], false, "{answer}");

        // The bare reference, answering the same bytes.
        let jwk = key.jwks().keys[0].clone();
        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_issuer(&[&issuer]);
        validation.set_audience(&[&audience]);
        let bare = Arc::new(Bare {
            key: DecodingKey::from_jwk(&jwk).unwrap(),
            validation,
            answer,
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let bare_url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let router = Router::new().route("/mcp", post(bare_handler)).with_state(bare);
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });

        println!("hot_path: authenticated tools/call get_loan_reporting_metadata, {seconds} s per run");
        let only = std::env::var("HOT_PATH_ONLY").unwrap_or_default();
        let nan = common::Throughput { per_second: f64::NAN, cpu_us_per_call: f64::NAN };
        // `HOT_PATH_CONNECTIONS=1,16` measures other loads (1: the latency of one call at a time).
        let loads: Vec<usize> = std::env::var("HOT_PATH_CONNECTIONS")
            .ok()
            .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
            .unwrap_or_else(|| vec![16, 64]);
        for connections in loads {
            let reference = if only == "loanhost" {
                nan
            } else {
                common::throughput(std::slice::from_ref(&bare_url), std::slice::from_ref(&token), "get_loan_reporting_metadata", connections, seconds).await
            };
            let ours = if only == "bare" {
                nan
            } else {
                common::throughput(std::slice::from_ref(&loanhost_url), std::slice::from_ref(&token), "get_loan_reporting_metadata", connections, seconds).await
            };
            println!(
                "hot_path/{connections}_connections: bare axum + jsonwebtoken {:.0} req/s, loanhost {:.0} req/s, ratio {:.2}; \
                 CPU per call (server and load generator) {:.0} / {:.0} µs, ratio {:.2}",
                reference.per_second,
                ours.per_second,
                ours.per_second / reference.per_second,
                reference.cpu_us_per_call,
                ours.cpu_us_per_call,
                reference.cpu_us_per_call / ours.cpu_us_per_call,
            );
        }
    });
}
