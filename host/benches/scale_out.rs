//! Scale-out throughput: Agents' `tools/call report_loans` (each caller's own loans, a real
//! statement) against one `loanhost serve` process, then against two processes of the binary
//! on the same PostgreSQL database with the load spread over both, in the same run. Needs
//! `BENCH_POSTGRES_URL` (`make bench` sets it); prints requests per second and the ratio.
//!
//! `SCALE_OUT_SECONDS` (default 8) is the measuring time of each run. On a machine with fewer
//! cores than hosts + database + load generator need, the ratio measures the machine.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

mod common;

use loanhost::oauth::devidp::SigningKey;

const TODAY: &str = "2026-03-15";
const PUBLIC: &str = "http://loanhost.example";

struct Host(Child);

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(port: u16, db_url: &str, plugins: &std::path::Path, cache: &std::path::Path) -> Host {
    Host(
        Command::new(env!("CARGO_BIN_EXE_loanhost"))
            .arg("serve")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env(
                "RUST_LOG",
                std::env::var("SCALE_OUT_LOG").unwrap_or_else(|_| "error".into()),
            )
            .envs(common::server_env(port, db_url.to_string(), plugins, cache))
            // Both hosts answer for the load balancer's URL (tokens name it as their issuer).
            .env("LOANHOST_BASE_URL", PUBLIC)
            // Behind a public base URL the dev IdP (whose tokens the bench mints) needs a password.
            .env("LOANHOST_DEV_IDP_PASSWORD", "scale-out-bench-password")
            .env("LOANHOST_TODAY", TODAY)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting the loanhost binary"),
    )
}

fn main() {
    let Some(seconds) = common::run_seconds("SCALE_OUT_SECONDS") else {
        return;
    };
    let Ok(admin_url) = std::env::var("BENCH_POSTGRES_URL") else {
        println!("scale_out: skipped (BENCH_POSTGRES_URL is not set)");
        return;
    };
    let rt = common::runtime();
    let dir = tempfile::tempdir().unwrap();
    rt.block_on(async {
        // A fresh database with 5,000 seeded loans.
        let admin = sqlx::PgPool::connect(&admin_url).await.unwrap();
        sqlx::query("DROP DATABASE IF EXISTS loanhost_bench_scale_out").execute(&admin).await.unwrap();
        sqlx::query("CREATE DATABASE loanhost_bench_scale_out").execute(&admin).await.unwrap();
        let db_url = format!("{}/loanhost_bench_scale_out", admin_url.rsplit_once('/').unwrap().0);
        let db = loanhost::data::Db::open(&db_url).await.unwrap();
        let seed = dir.path().join("seed");
        loanhost::data::seed::write_dir(
            loanhost::data::seed::SeedSpec {
                loans: 5000,
                seed: 1,
                today: loanhost::config::parse_date(TODAY).unwrap(),
            },
            &seed,
        )
        .unwrap();
        loanhost::data::import::import_dir(&db, &seed, |_, _| {}).await.unwrap();
        // Active Agents, as the database has them (later lines of the seed may give an id
        // another email).
        let loanhost::data::Db::Postgres(pool) = &db else { unreachable!() };
        let agents: Vec<String> = sqlx::query_scalar(
            "SELECT a.email FROM agents a JOIN agent_roles r ON r.agent_id = a.id \
             WHERE r.role = 'Agent' AND a.active = 1 ORDER BY a.email LIMIT 16",
        )
        .fetch_all(pool)
        .await
        .unwrap();
        let plugins = common::plugins_dir(dir.path(), &["report_loans"]);
        let cache = dir.path().join("cache");
        std::fs::create_dir_all(&cache).unwrap();
        let key = SigningKey::load_or_create(&cache.join("dev-idp-rsa.pem")).unwrap();
        let tokens: Vec<String> = agents
            .iter()
            .map(|e| {
                key.mint(&format!("{PUBLIC}/dev-idp"), e, "https://loanhost.local/mcp", "", Duration::from_secs(3600))
                    .unwrap()
            })
            .collect();
        let ports = [common::free_port(), common::free_port()];
        let _hosts: Vec<Host> = ports.iter().map(|p| start(*p, &db_url, &plugins, &cache)).collect();
        let client = reqwest::Client::new();
        let urls: Vec<String> = ports.iter().map(|p| format!("http://127.0.0.1:{p}/mcp")).collect();
        for p in ports {
            common::wait_until_up(&client, &format!("http://127.0.0.1:{p}/ready")).await;
        }
        println!("scale_out: Agents' tools/call report_loans on one PostgreSQL, 32 connections, {seconds} s per run ({} agents)", tokens.len());
        let one = common::throughput(&urls[..1], &tokens, "report_loans", 32, seconds).await.per_second;
        let two = common::throughput(&urls, &tokens, "report_loans", 32, seconds).await.per_second;
        println!(
            "scale_out: one host {one:.0} req/s, two hosts {two:.0} req/s, ratio {:.2} ({} cores here)",
            two / one,
            std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
        );
    });
}
