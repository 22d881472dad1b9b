//! Scale-out: the host keeps no state of its own beyond caches, so several `loanhost serve`
//! processes can serve one PostgreSQL database behind any load balancer. Two processes of the
//! real binary, one database, one shared plugin directory, one public base URL (the load
//! balancer's): every report answers the same from both; a plugin removed from and put back
//! into the shared directory disappears from and comes back to both; an agent deactivated in
//! the database is refused by both (each host's directory is told by `NOTIFY`).
//!
//! Every request goes to loopback servers this test started; every wait is bounded.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use loanhost::oauth::devidp::SigningKey;
use serde_json::{json, Value};

use loanhost_tests as kit;

const TODAY: &str = "2026-03-15";
/// The one public URL both hosts answer for (tokens name it as their issuer).
const PUBLIC: &str = "http://loanhost.example";

struct Host {
    child: Child,
    base: String,
    log: PathBuf,
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_host(db_url: &str, plugins: &Path, cache: &Path, log: &Path) -> Host {
    start_host_with(db_url, plugins, cache, log, &[])
}

fn start_host_with(
    db_url: &str,
    plugins: &Path,
    cache: &Path,
    log: &Path,
    env: &[(&str, &str)],
) -> Host {
    let port = kit::free_port();
    let mut command = kit::serve(
        env!("CARGO_BIN_EXE_loanhost"),
        port,
        PUBLIC,
        db_url,
        plugins,
        cache,
    );
    command
        .env("LOANHOST_TODAY", TODAY)
        // Behind a public base URL the dev IdP (whose tokens the test mints) needs a password.
        .env("LOANHOST_DEV_IDP_PASSWORD", "scale-out-test-password")
        .env("LOANHOST_AUDIT_LOG", "off");
    command.envs(env.iter().copied());
    let child = command
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(log).unwrap()))
        .spawn()
        .expect("starting the loanhost binary");
    Host {
        child,
        base: format!("http://127.0.0.1:{port}"),
        log: log.to_path_buf(),
    }
}

async fn fresh_postgres_database() -> String {
    let admin = std::env::var("TEST_POSTGRES_URL")
        .expect("TEST_POSTGRES_URL is not set: run `make test`, which starts PostgreSQL (scripts/postgres.sh)");
    let pool = sqlx::PgPool::connect(&admin).await.unwrap();
    let name = format!(
        "loanhost_test_{}_scale_out_{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&pool)
        .await
        .unwrap();
    let (base, _) = admin.rsplit_once('/').unwrap();
    format!("{base}/{name}")
}

async fn call(
    client: &reqwest::Client,
    host: &Host,
    token: &str,
    tool: &str,
    args: &Value,
) -> reqwest::Response {
    client
        .post(format!("{}/mcp", host.base))
        .bearer_auth(token)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}}))
        .send()
        .await
        .unwrap()
}

async fn tools(client: &reqwest::Client, host: &Host, token: &str) -> Vec<String> {
    let reply: Value = client
        .post(format!("{}/mcp", host.base))
        .bearer_auth(token)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut names: Vec<String> = reply["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

/// Polls `check` on both hosts until it holds for both (bounded: 10 s).
async fn on_both<F, Fut>(hosts: &[Host; 2], what: &str, mut check: F)
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    for (i, host) in hosts.iter().enumerate() {
        while !check(i).await {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "host {i} ({}): not within 10 s: {what}",
                host.base
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// An HTTP client for the hosts, and a minter of the dev IdP's tokens with the key the hosts
/// made in `cache` (both hosts sign and accept with it).
fn client_and_tokens(cache: &Path) -> (reqwest::Client, impl Fn(&str) -> String) {
    let key = SigningKey::load_or_create(&cache.join("dev-idp-rsa.pem")).unwrap();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let token = move |email: &str| {
        key.mint(
            &format!("{PUBLIC}/dev-idp"),
            email,
            "https://loanhost.local/mcp",
            "",
            Duration::from_secs(600),
        )
        .unwrap()
    };
    (client, token)
}

/// The shipped plugins built into `dir/plugins`.
fn plugin_dir(dir: &Path) -> PathBuf {
    let plugins = dir.join("plugins");
    let status = Command::new(kit::root().join("scripts/build-plugins.sh"))
        .arg(&plugins)
        .stdout(Stdio::null())
        .status()
        .expect("running scripts/build-plugins.sh");
    assert!(status.success(), "building the plugins failed");
    plugins
}

/// A fresh PostgreSQL database with `loans` seeded loans (and the demo directory).
async fn seeded_database(dir: &Path, loans: u64) -> String {
    let db_url = fresh_postgres_database().await;
    let db = loanhost::data::Db::open(&db_url).await.unwrap();
    let seed = dir.join("seed");
    loanhost::data::seed::write_dir(
        loanhost::data::seed::SeedSpec {
            loans,
            seed: 7,
            today: loanhost::config::parse_date(TODAY).unwrap(),
        },
        &seed,
    )
    .unwrap();
    loanhost::data::import::import_dir(&db, &seed, |_, _| {})
        .await
        .unwrap();
    db_url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_serve_one_postgres_database() {
    // Arrange: one database with seeded data, one plugin directory, two processes.
    let dir = tempfile::tempdir().unwrap();
    let plugins = plugin_dir(dir.path());
    let db_url = seeded_database(dir.path(), 2000).await;
    // One cache folder, empty: both hosts start at once and each makes the dev IdP's key and
    // the compile cache's key unless the other made it first; they must end with one of each.
    let cache = dir.path().join("cache");
    let mut hosts = [
        start_host(&db_url, &plugins, &cache, &dir.path().join("host-0.log")),
        start_host(&db_url, &plugins, &cache, &dir.path().join("host-1.log")),
    ];
    for h in &mut hosts {
        kit::wait_until_serving(&h.base, &mut h.child, &h.log).await;
    }
    // The key both hosts sign and accept with (below, each accepts tokens it did not sign).
    let (client, token) = client_and_tokens(&cache);
    let admin = token("admin@demo.loanhost.local");
    let all_tools = tools(&client, &hosts[0], &admin).await;
    let shipped = std::fs::read_to_string(kit::root().join("plugins/tools/SHIPPED"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .count();
    on_both(&hosts, "every shipped tool is loaded", |i| {
        let (client, admin, all) = (&client, &admin, &all_tools);
        let h = &hosts[i];
        async move { all.len() == shipped && tools(client, h, admin).await == *all }
    })
    .await;

    // Act 1 / Assert: the same answers from both hosts, per caller and report.
    let calls = [
        ("report_loans", json!({"groupBy": "Status"})),
        (
            "report_loans",
            json!({"groupBy": "LoanOfficer", "metric": "Sum"}),
        ),
        ("loan_pipeline_report", json!({})),
        ("report_loan_milestones", json!({"lookback": 6})),
        ("mlo_pipeline_report", json!({})),
        (
            "warehouse_loan_milestone_report",
            json!({"fromDate": "2025-01-01", "toDate": "2026-03-15"}),
        ),
    ];
    let mut compared = 0;
    for email in [
        "admin@demo.loanhost.local",
        "agent@demo.loanhost.local",
        "processor@demo.loanhost.local",
    ] {
        let t = token(email);
        for (tool, args) in &calls {
            let a: Value = call(&client, &hosts[0], &t, tool, args)
                .await
                .json()
                .await
                .unwrap();
            let b: Value = call(&client, &hosts[1], &t, tool, args)
                .await
                .json()
                .await
                .unwrap();
            assert_eq!(a, b, "{email} {tool} {args}: both hosts answer the same");
            if a["result"]["isError"] == false {
                compared += 1;
            }
        }
    }
    assert!(
        compared >= 12,
        "most calls succeed for these callers ({compared})"
    );

    // Act 2 / Assert: hot reload from the shared directory reaches both hosts.
    let parked = dir.path().join("parked");
    std::fs::create_dir_all(&parked).unwrap();
    for ext in ["wasm", "toml"] {
        let f = format!("mlo_pipeline_report.{ext}");
        std::fs::rename(plugins.join(&f), parked.join(&f)).unwrap();
    }
    on_both(&hosts, "mlo_pipeline_report is gone", |i| {
        let (client, admin) = (&client, &admin);
        let h = &hosts[i];
        async move {
            !tools(client, h, admin)
                .await
                .contains(&"mlo_pipeline_report".to_string())
        }
    })
    .await;
    // Back, manifest first, as a deployment would copy them (each file renamed into place).
    for ext in ["toml", "wasm"] {
        let f = format!("mlo_pipeline_report.{ext}");
        std::fs::rename(parked.join(&f), plugins.join(&f)).unwrap();
    }
    on_both(&hosts, "mlo_pipeline_report is back", |i| {
        let (client, admin, all) = (&client, &admin, &all_tools);
        let h = &hosts[i];
        async move { tools(client, h, admin).await == *all }
    })
    .await;

    // Act 3 / Assert: an agent deactivated in the database is refused by both hosts.
    let agent = token("agent@demo.loanhost.local");
    for h in &hosts {
        let r = call(&client, h, &agent, "report_loans", &json!({})).await;
        assert_eq!(r.status(), 200);
    }
    let db = loanhost::data::Db::open(&db_url).await.unwrap();
    let found = db
        .agent_by_email("agent@demo.loanhost.local")
        .await
        .unwrap()
        .unwrap();
    let deactivate = match &db {
        loanhost::data::Db::Postgres(p) => {
            sqlx::query("UPDATE agents SET active = 0 WHERE id = $1")
                .bind(&found.id)
                .execute(p)
        }
        loanhost::data::Db::Sqlite(_) => unreachable!(),
    };
    deactivate.await.unwrap();
    on_both(&hosts, "the deactivated agent is refused", |i| {
        let (client, agent) = (&client, &agent);
        let h = &hosts[i];
        async move {
            call(client, h, agent, "report_loans", &json!({}))
                .await
                .status()
                == 401
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callers_budget_holds_across_two_hosts() {
    // Arrange: two hosts on one database with 120 calls a minute per caller: a burst of 20,
    // refilled at 2 a second, leased in slices of 2 (decision 0048). On its own, each host
    // would admit a burst of 20.
    const PER_MINUTE: f64 = 120.0;
    const BURST: f64 = 20.0;
    const SLICE: f64 = 2.0;
    let dir = tempfile::tempdir().unwrap();
    let plugins = plugin_dir(dir.path());
    let db_url = seeded_database(dir.path(), 200).await;
    let cache = dir.path().join("cache");
    let env = [("LOANHOST_CALLER_CALLS_PER_MINUTE", "120")];
    let mut hosts = [
        start_host_with(
            &db_url,
            &plugins,
            &cache,
            &dir.path().join("host-0.log"),
            &env,
        ),
        start_host_with(
            &db_url,
            &plugins,
            &cache,
            &dir.path().join("host-1.log"),
            &env,
        ),
    ];
    for h in &mut hosts {
        kit::wait_until_serving(&h.base, &mut h.child, &h.log).await;
    }
    let (client, token) = client_and_tokens(&cache);
    let agent = token("agent@demo.loanhost.local");
    let admin = token("admin@demo.loanhost.local");
    let metadata = json!({});

    // Act: the agent's calls go to the hosts in turn until both refuse one in a row (at most
    // 400 calls); then the admin calls each host once.
    let started = Instant::now();
    let (mut admitted, mut refused_in_a_row) = (0u32, 0);
    for turn in 0..400 {
        let host = &hosts[turn % 2];
        let r = call(
            &client,
            host,
            &agent,
            "get_loan_reporting_metadata",
            &metadata,
        )
        .await;
        match r.status().as_u16() {
            200 => {
                admitted += 1;
                refused_in_a_row = 0;
            }
            429 => {
                refused_in_a_row += 1;
                if refused_in_a_row == 2 {
                    break;
                }
            }
            other => panic!("host {}: {other}: {}", turn % 2, r.text().await.unwrap()),
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let admin_statuses = [
        call(
            &client,
            &hosts[0],
            &admin,
            "get_loan_reporting_metadata",
            &metadata,
        )
        .await
        .status(),
        call(
            &client,
            &hosts[1],
            &admin,
            "get_loan_reporting_metadata",
            &metadata,
        )
        .await
        .status(),
    ];

    // Assert: the fleet's burst once, give or take one slice per host, besides what refilled
    // while the calls ran; hosts on their own would admit two bursts and two refills.
    let refilled = (elapsed * PER_MINUTE / 60.0).ceil();
    let admitted = f64::from(admitted);
    assert_eq!(refused_in_a_row, 2, "both hosts refuse within 400 calls");
    assert!(
        admitted <= BURST + 2.0 * SLICE + refilled,
        "{admitted} calls admitted across two hosts, more than the fleet's burst of {BURST} \
         (+{refilled} refilled in {elapsed:.1} s)"
    );
    assert!(
        admitted >= BURST - 2.0 * SLICE,
        "{admitted} calls admitted across two hosts, fewer than the fleet's burst of {BURST}"
    );
    assert_eq!(
        admin_statuses.map(|s| s.as_u16()),
        [200, 200],
        "another caller's budget is their own"
    );
}
