//! End to end over HTTP: `tools/call report_loans` (groupBy Status) and
//! `report_loan_milestones` against a server on loopback with `BENCH_LOANS` seeded loans
//! (default 1,000,000, with their LOS history), as an Admin and as an Agent: token
//! validation, agent resolution, plugin instantiation, scope, SQL and JSON, all included.
//! The seeded SQLite database is cached in `~/.cache/loanhost/bench/full-<N>.db`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

mod common;

use criterion::{criterion_group, criterion_main, Criterion};
use loanhost::app::Application;
use loanhost::config::Config;
use loanhost::devidp::SigningKey;
use serde_json::{json, Value};

fn loans() -> u64 {
    std::env::var("BENCH_LOANS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

fn bench_dir() -> PathBuf {
    PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/loanhost/bench")
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let n = loans();
    let dir = bench_dir();
    std::fs::create_dir_all(&dir).unwrap();
    // BENCH_DATABASE_URL runs it on another database (e.g. PostgreSQL).
    let db_url = std::env::var("BENCH_DATABASE_URL")
        .unwrap_or_else(|_| format!("sqlite://{}", dir.join(format!("full-{n}.db")).display()));
    let today = "2026-11-22";
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let plugin_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../plugins/dist");
    let mut env = common::server_env(port, db_url, &plugin_dir, &dir.join("cache"));
    env.insert("LOANHOST_TODAY".into(), today.into());
    let config = Config::from_map(&env).unwrap();
    let (issuer, audience) = (config.idp.issuer.clone(), config.mcp_audience.clone());
    let key = SigningKey::load_or_create(&loanhost::app::dev_idp_key_path(&config)).unwrap();

    rt.block_on(async {
        let app = Application::build(config)
            .await
            .expect("run `make plugins` first");
        let db = app.db();
        let count: i64 = match &db {
            loanhost::data::Db::Sqlite(p) => sqlx::query_scalar("SELECT COUNT(*) FROM loans")
                .fetch_one(p)
                .await
                .unwrap(),
            loanhost::data::Db::Postgres(p) => sqlx::query_scalar("SELECT COUNT(*) FROM loans")
                .fetch_one(p)
                .await
                .unwrap(),
        };
        if count != n as i64 {
            let seed_dir = dir.join(format!("full-seed-{n}"));
            let started = Instant::now();
            let spec = loanhost::data::seed::SeedSpec {
                loans: n,
                seed: 1,
                today: loanhost::config::parse_date(today).unwrap(),
            };
            loanhost::data::seed::write_dir(spec, &seed_dir).unwrap();
            loanhost::data::import::import_dir(&db, &seed_dir, |f, r| eprintln!("  {f}: {r}"))
                .await
                .unwrap();
            let _ = std::fs::remove_dir_all(&seed_dir);
            eprintln!(
                "seeded and imported {n} loans in {:.0} s",
                started.elapsed().as_secs_f64()
            );
        }
        tokio::spawn(app.run_until_stopped());
    });

    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let token = |email: &str| {
        key.mint(&issuer, email, &audience, "", Duration::from_secs(3600))
            .unwrap()
    };
    let call = |token: String, tool: &'static str, args: Value| {
        let client = client.clone();
        let url = url.clone();
        async move {
            let r = common::tools_call(&client, &url, &token, tool, args).await;
            if r["result"]["isError"] != false {
                eprintln!("{tool}: {}", r["result"]["content"][0]["text"]);
            }
            r
        }
    };
    let mut group = c.benchmark_group(format!("http_tools_call_{n}_loans"));
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    for (who, email) in [
        ("admin", "admin@demo.loanhost.local"),
        ("agent", "agent@demo.loanhost.local"),
    ] {
        let t = token(email);
        for (tool, args) in [
            ("report_loans", json!({"groupBy": "Status"})),
            ("report_loan_milestones", json!({})),
        ] {
            // One timed call first: a call that fails (e.g. the statement timeout) is reported
            // and not measured.
            let started = Instant::now();
            let once = rt.block_on(call(t.clone(), tool, args.clone()));
            let ok = once["result"]["isError"] == false;
            eprintln!(
                "{tool}/{who}: one call {:.3} s, ok: {ok}",
                started.elapsed().as_secs_f64()
            );
            if ok {
                group.bench_function(format!("{tool}/{who}"), |b| {
                    b.to_async(&rt).iter(|| call(t.clone(), tool, args.clone()))
                });
            }
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
