//! The HTTP hot path, as throughput, measured as a user sees it: authenticated `tools/call
//! get_loan_reporting_metadata` against a plain `loanhost serve` (the release binary, a
//! process of its own, with every check a user's server makes: the token, the agent resolved
//! per request, the budgets, a fresh instance, the sealed audit line to a file, its log at
//! `info`; only the budgets' amounts lifted) and against a bare reference written here, in a
//! process of its own too (this binary run again as `HOT_PATH_BARE`: axum + jsonwebtoken,
//! verifying the RS256 bearer token on every request, parsing the JSON-RPC body and answering
//! the bytes loanhost answered), in the same run, on loopback, at 16 and 64 connections. The
//! one load generator runs in this process for both and shares the machine's two cores with
//! the server. Prints requests per second, the ratio, and each server's CPU time per call.
//! Then the same from outside, as a user's load tool measures it: `wrk` (a process of its own;
//! `common::outside`) against each server, the two alternated run by run, each run's ratio and
//! their median: the figure `docs/benchmarks.md` quotes. The load is spread over [`CALLERS`]
//! callers, each under its budget.
//!
//! `HOT_PATH_SECONDS` (default 8) is the measuring time of each run; `HOT_PATH_ONLY=loanhost`
//! (or `bare`) runs one side only, for profiling it; `HOT_PATH_CONNECTIONS` (default `16,64`)
//! sets the loads; `HOT_PATH_ROUNDS` (default 3) the `wrk` runs of each server at each load.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

mod common;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use axum::Router;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use loanhost::config::Config;
use loanhost::oauth::devidp::SigningKey;
use serde_json::{json, Value};

/// The variable that makes this binary the bare reference: `listen jwks-file answer-file
/// issuer audience`, separated by newlines.
const BARE: &str = "HOT_PATH_BARE";

/// Callers the load is spread over (each with the budget's ceiling of a million calls a
/// minute: one alone would spend it at these rates).
const CALLERS: u32 = 4;

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

/// Serves the bare reference as `spec` (see [`BARE`]) says, until killed; a runtime of two
/// workers, as loanhost's on this machine.
fn serve_bare(spec: &str) {
    let parts: Vec<&str> = spec.split('\n').collect();
    let [listen, jwks, answer, issuer, audience] = parts[..] else {
        panic!("{BARE}: five lines expected, got {spec:?}");
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
    common::runtime().block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen).await.unwrap();
        let router = Router::new()
            .route("/mcp", post(bare_handler))
            .with_state(bare);
        axum::serve(listener, router).await.unwrap();
    });
}

/// A server process, killed when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn main() {
    if let Ok(spec) = std::env::var(BARE) {
        return serve_bare(&spec);
    }
    let Some(seconds) = common::run_seconds("HOT_PATH_SECONDS") else {
        return;
    };
    let rt = common::runtime();
    let dir = tempfile::tempdir().unwrap();
    rt.block_on(async {
        // The database: migrated, with one agent.
        let db_url = format!("sqlite://{}", dir.path().join("hot.db").display());
        let db = loanhost::data::Db::open(&db_url).await.unwrap();
        db.migrate().await.unwrap();
        // Callers of their own: a caller's budget (at most a million calls a minute) is
        // still checked on every call, and one caller alone would spend it.
        let emails: Vec<String> = (1..=CALLERS).map(|n| format!("agent{n}@example.com")).collect();
        for (n, email) in emails.iter().enumerate() {
            common::add_agent_as(&db, &format!("00000000-0000-0000-0000-0000000000c{n}"), email).await;
        }
        drop(db);

        // loanhost serve with the metadata plugin, as a user runs it but for the budgets'
        // amounts: the audit line to a file (sealed, its head beside it), the log at `info`.
        let port = common::free_port();
        let plugins = common::plugins_dir(dir.path(), &["get_loan_reporting_metadata"]);
        let mut env = common::server_env(port, db_url, &plugins, &dir.path().join("cache"));
        env.insert(
            "LOANHOST_AUDIT_LOG".into(),
            dir.path().join("audit.jsonl").display().to_string(),
        );
        let config = Config::from_map(&env).unwrap();
        let (issuer, audience) = (config.idp.issuer.clone(), config.mcp_audience.clone());
        let key = SigningKey::load_or_create(&loanhost::app::dev_idp_key_path(&config)).unwrap();
        let loanhost = Process(
            Command::new(env!("CARGO_BIN_EXE_loanhost"))
                .arg("serve")
                .envs(&env)
                .env_remove("RUST_LOG")
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(dir.path().join("loanhost.log")).unwrap())
                .spawn()
                .unwrap(),
        );
        let tokens: Vec<String> = emails
            .iter()
            .map(|email| key.mint(&issuer, email, &audience, "", Duration::from_secs(3600)).unwrap())
            .collect();
        let token = tokens[0].clone();
        let loanhost_url = format!("http://127.0.0.1:{port}/mcp");
        let client = reqwest::Client::new();
        common::wait_until_up(&client, &format!("http://127.0.0.1:{port}/ready")).await;
        let answer = common::tools_call(&client, &loanhost_url, &token, "get_loan_reporting_metadata", json!({})).await;
        assert_eq!(answer["result"]["isError"], false, "{answer}");

        // The bare reference, in a process of its own, answering the same bytes.
        let (jwks, answer_file) = (dir.path().join("jwks.json"), dir.path().join("answer.json"));
        std::fs::write(&jwks, serde_json::to_vec(&key.jwks()).unwrap()).unwrap();
        std::fs::write(&answer_file, answer.to_string()).unwrap();
        let bare_port = common::free_port();
        let spec = [
            format!("127.0.0.1:{bare_port}"),
            jwks.display().to_string(),
            answer_file.display().to_string(),
            issuer.clone(),
            audience.clone(),
        ]
        .join("\n");
        let bare = Process(
            Command::new(std::env::current_exe().unwrap())
                .env(BARE, spec)
                .stdout(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let bare_url = format!("http://127.0.0.1:{bare_port}/mcp");
        // Up when it accepts a connection (at most 30 s).
        for _ in 0..600 {
            if tokio::net::TcpStream::connect(("127.0.0.1", bare_port)).await.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let reply = common::tools_call(&client, &bare_url, &token, "get_loan_reporting_metadata", json!({})).await;
        assert_eq!(reply, answer, "the bare handler answers loanhost's bytes");

        println!("hot_path: authenticated tools/call get_loan_reporting_metadata, {seconds} s per run, both servers processes of their own");
        let only = std::env::var("HOT_PATH_ONLY").unwrap_or_default();
        let nan = common::Throughput { per_second: f64::NAN, cpu_us_per_call: f64::NAN, server_cpu_us_per_call: f64::NAN };
        // `HOT_PATH_CONNECTIONS=1,16` measures other loads (1: the latency of one call at a time).
        let loads: Vec<usize> = std::env::var("HOT_PATH_CONNECTIONS")
            .ok()
            .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
            .unwrap_or_else(|| vec![16, 64]);
        let tokens = &tokens[..];
        for &connections in &loads {
            let reference = if only == "loanhost" {
                nan
            } else {
                common::throughput_of(std::slice::from_ref(&bare_url), tokens, "get_loan_reporting_metadata", connections, seconds, &[bare.0.id()]).await
            };
            let ours = if only == "bare" {
                nan
            } else {
                common::throughput_of(std::slice::from_ref(&loanhost_url), tokens, "get_loan_reporting_metadata", connections, seconds, &[loanhost.0.id()]).await
            };
            println!(
                "hot_path/{connections}_connections: bare axum + jsonwebtoken {:.0} req/s, loanhost {:.0} req/s, ratio {:.2}; \
                 server CPU per call {:.0} / {:.0} µs, ratio {:.2}",
                reference.per_second,
                ours.per_second,
                ours.per_second / reference.per_second,
                reference.server_cpu_us_per_call,
                ours.server_cpu_us_per_call,
                reference.server_cpu_us_per_call / ours.server_cpu_us_per_call,
            );
        }
        // From outside: `wrk` (a process of its own) against each server, the two alternated
        // run by run; each run's ratio is against the bare handler's run beside it.
        if !common::outside::available() {
            println!("hot_path/wrk: skipped: wrk is not installed (scripts/setup.sh installs it)");
        } else if only.is_empty() {
            let rounds: usize = std::env::var("HOT_PATH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
            let script = common::outside::script(dir.path(), "get_loan_reporting_metadata", tokens);
            let wait = seconds.ceil() as u64;
            for &connections in &loads {
                // Warm-up, not counted: both servers' connections and caches.
                common::outside::run(&bare_url, &script, connections, 1, bare.0.id());
                common::outside::run(&loanhost_url, &script, connections, 1, loanhost.0.id());
                let mut ratios = Vec::new();
                let mut cpu = Vec::new();
                for round in 0..rounds {
                    let run_bare = || common::outside::run(&bare_url, &script, connections, wait, bare.0.id());
                    let run_ours = || common::outside::run(&loanhost_url, &script, connections, wait, loanhost.0.id());
                    let (reference, ours) = if round % 2 == 0 {
                        let r = run_bare();
                        (r, run_ours())
                    } else {
                        let o = run_ours();
                        (run_bare(), o)
                    };
                    ratios.push(ours.per_second / reference.per_second);
                    cpu.push(format!("{:.0} / {:.0}", ours.server_cpu_us_per_call, reference.server_cpu_us_per_call));
                }
                let mut sorted = ratios.clone();
                sorted.sort_by(f64::total_cmp);
                println!(
                    "hot_path/wrk/{connections}_connections: loanhost ÷ bare handler per run {} (median {:.2}); \
                     server CPU per call, loanhost / bare: {} µs",
                    ratios.iter().map(|r| format!("{r:.2}")).collect::<Vec<_>>().join(", "),
                    sorted[sorted.len() / 2],
                    cpu.join(", "),
                );
            }
        }
        drop((loanhost, bare));
    });
}
