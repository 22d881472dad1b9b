//! The HTTP hot path, as throughput, measured as a user sees it: authenticated `tools/call
//! get_loan_reporting_metadata` against a plain `loanhost serve` (the release binary, a
//! process of its own, with every check a user's server makes: the token, the agent resolved
//! per request, the budgets, a fresh instance, the sealed audit line to a file, its log at
//! `info`; only the budgets' amounts lifted) and against a bare reference (`tests/bare`:
//! axum + jsonwebtoken, verifying the RS256 bearer token on every request, parsing the
//! JSON-RPC body and answering the bytes loanhost answered), in the same run, on loopback, at
//! 16 and 64 connections.
//!
//! The bare handler runs in two builds, each a process of its own: as written (`loanhost-bare`,
//! the system allocator, what the handler's libraries give) and linked with loanhost's
//! allocator (this binary run again as `HOT_PATH_BARE`), which makes it faster and the stricter
//! reference.
//!
//! First an in-process client (the one load generator runs in this process and shares the
//! machine's two cores with the server) against loanhost and the bare handler with loanhost's
//! allocator: requests per second, the ratio, each server's CPU time per call. Then from
//! outside, as a user's load tool measures it: `wrk` (a process of its own; `common::outside`)
//! against each of the three servers, in one-second slices taken in turn, so that a run of each
//! covers the same seconds as the others' ([`SLICE_SECONDS`]); each run's ratio against each
//! reference and their medians: the figures `docs/benchmarks.md` quotes. The load is spread
//! over [`CALLERS`] callers, each under its budget.
//!
//! `HOT_PATH_SECONDS` (default 8) is the measuring time of each run (its slices, from
//! outside); `HOT_PATH_ONLY=loanhost` (or `bare`) runs one side only, for profiling it;
//! `HOT_PATH_CONNECTIONS` (default `16,64`) sets the loads; `HOT_PATH_ROUNDS` (default 3) the
//! `wrk` runs of each server at each load.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

mod common;

/// The bare reference's handler, the same source as `loanhost-bare`'s (tests/bare).
#[path = "../../tests/bare/src/handler.rs"]
mod bare_reference;

use loanhost::config::Config;
use loanhost::oauth::devidp::SigningKey;
use serde_json::json;

/// Callers the load is spread over (each with the budget's ceiling of a million calls a
/// minute: one alone would spend it at these rates).
const CALLERS: u32 = 4;
/// The length of one `wrk` slice from outside: a run of the servers is their slices in turn.
const SLICE_SECONDS: u64 = 1;

/// Waits until `port` accepts a connection (at most 30 s).
async fn wait_for_port(port: u16) {
    for _ in 0..600 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("nothing answers on port {port}");
}

/// Starts `binary` as the bare reference on a free port (`spec` gives the spec for a port: see
/// `bare_reference::SPEC`); the process and its `/mcp` URL once it accepts connections.
async fn start_bare(
    binary: &Path,
    spec: impl Fn(u16) -> String,
) -> std::io::Result<(Process, String)> {
    let port = common::free_port();
    let process = Process(
        Command::new(binary)
            .env(bare_reference::SPEC, spec(port))
            .stdout(Stdio::null())
            .spawn()?,
    );
    wait_for_port(port).await;
    Ok((process, format!("http://127.0.0.1:{port}/mcp")))
}

/// `loanhost-bare`, built beside this benchmark (`make bench` builds it), or why it is not.
fn bare_apart_binary() -> Result<PathBuf, String> {
    let bench = std::env::current_exe().unwrap();
    bench
        .parent()
        .and_then(|deps| deps.parent())
        .map(|dir| dir.join("loanhost-bare"))
        .filter(|binary| binary.is_file())
        .ok_or_else(|| {
            "it is not built: `cargo build --release -p loanhost-bare --locked` builds it".into()
        })
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
    if let Ok(spec) = std::env::var(bare_reference::SPEC) {
        return bare_reference::serve(&spec);
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
        let spec_for = |port: u16| {
            [
                format!("127.0.0.1:{port}"),
                jwks.display().to_string(),
                answer_file.display().to_string(),
                issuer.clone(),
                audience.clone(),
            ]
            .join("\n")
        };
        let (bare, bare_url) = start_bare(&std::env::current_exe().unwrap(), spec_for).await.unwrap();
        let reply = common::tools_call(&client, &bare_url, &token, "get_loan_reporting_metadata", json!({})).await;
        assert_eq!(reply, answer, "the bare handler answers loanhost's bytes");
        // The same handler built apart (`loanhost-bare`: the system allocator, as the handler
        // is written from its libraries' documentation), for the `wrk` part.
        let apart = match bare_apart_binary() {
            Ok(binary) => start_bare(&binary, spec_for).await.map_err(|e| format!("it does not start: {e}")),
            Err(why) => Err(why),
        };
        if let Ok((_, url)) = &apart {
            let reply = common::tools_call(&client, url, &token, "get_loan_reporting_metadata", json!({})).await;
            assert_eq!(reply, answer, "the bare handler built apart answers loanhost's bytes");
        }

        println!("hot_path: authenticated tools/call get_loan_reporting_metadata, {seconds} s per run, each server a process of its own");
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
        // From outside: `wrk` (a process of its own) against each server, alternated slice by
        // slice; each run's ratio is against each bare handler's run over the same seconds.
        if !common::outside::available() {
            println!("hot_path/wrk: skipped: wrk is not installed (scripts/setup.sh installs it)");
        } else if only.is_empty() {
            let apart = match apart {
                Ok(apart) => Some(apart),
                Err(why) => {
                    println!("hot_path/wrk: the bare handler built apart is left out: {why}");
                    None
                }
            };
            let mut servers = vec![("loanhost", loanhost_url.clone(), loanhost.0.id())];
            if let Some((process, url)) = &apart {
                servers.push(("bare", url.clone(), process.0.id()));
            }
            servers.push(("bare with loanhost's allocator", bare_url.clone(), bare.0.id()));
            let rounds: usize = std::env::var("HOT_PATH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
            let script = common::outside::script(dir.path(), "get_loan_reporting_metadata", tokens);
            let slices = (seconds / SLICE_SECONDS as f64).ceil().max(1.0) as u64;
            for &connections in &loads {
                // Warm-up, not counted: the servers' connections and caches.
                for (_, url, pid) in &servers {
                    common::outside::run(url, &script, connections, 1, *pid);
                }
                // Per server, each run's calls per second and CPU per call. A run of the
                // three is `slices` slices of each, taken in turn (the order reversed
                // every other slice), so that all three are measured over the same stretch of
                // seconds: this machine's slow stretches (docs/benchmarks/hot_path.md) last
                // from seconds to minutes and slow whichever server runs in them.
                let mut runs = vec![Vec::new(); servers.len()];
                for _ in 0..rounds {
                    let mut run = vec![common::outside::Outside::default(); servers.len()];
                    for slice in 0..slices {
                        let mut order: Vec<usize> = (0..servers.len()).collect();
                        if slice % 2 == 1 {
                            order.reverse();
                        }
                        for i in order {
                            let (_, url, pid) = &servers[i];
                            run[i] = run[i].add(common::outside::run(url, &script, connections, SLICE_SECONDS, *pid));
                        }
                    }
                    for (i, measured) in run.into_iter().enumerate() {
                        runs[i].push((measured.per_second(), measured.server_cpu_us_per_call()));
                    }
                }
                for (i, (reference, _, _)) in servers.iter().enumerate().skip(1) {
                    let ratios: Vec<f64> = runs[0].iter().zip(&runs[i]).map(|(ours, theirs)| ours.0 / theirs.0).collect();
                    let mut sorted = ratios.clone();
                    sorted.sort_by(f64::total_cmp);
                    println!(
                        "hot_path/wrk/{connections}_connections: loanhost ÷ {reference} per run {} (median {:.2}); \
                         server CPU per call, loanhost / {reference}: {} µs",
                        ratios.iter().map(|r| format!("{r:.2}")).collect::<Vec<_>>().join(", "),
                        sorted[sorted.len() / 2],
                        runs[0].iter().zip(&runs[i]).map(|(ours, theirs)| format!("{:.0} / {:.0}", ours.1, theirs.1)).collect::<Vec<_>>().join(", "),
                    );
                }
            }
        }
        drop((loanhost, bare));
    });
}
