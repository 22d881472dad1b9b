//! The audit log's cost on the cheapest call: `tools/call get_loan_reporting_metadata` over
//! HTTP on loopback, against two servers in this process that differ only in
//! `LOANHOST_AUDIT_LOG` (`off`, and a file, written and flushed before each answer). The
//! figure to read is the ratio of the two, measured in the same run: criterion measures one
//! server after the other (so the machine's drift between the two windows lands in its
//! ratio); the summary printed at the end alternates rounds of calls between them.

use std::path::PathBuf;
use std::time::Duration;

mod common;

use criterion::{criterion_group, criterion_main, Criterion};
use loanhost::app::Application;
use loanhost::config::Config;
use loanhost::oauth::devidp::SigningKey;
use serde_json::json;

struct Server {
    url: String,
    token: String,
}

async fn server(dir: &std::path::Path, audit: &str) -> Server {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let plugins = dir.join(format!("plugins-{port}"));
    std::fs::create_dir_all(&plugins).unwrap();
    let dist = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../plugins/dist");
    for ext in ["wasm", "toml"] {
        std::fs::copy(
            dist.join(format!("get_loan_reporting_metadata.{ext}")),
            plugins.join(format!("get_loan_reporting_metadata.{ext}")),
        )
        .expect("run `make plugins` first");
    }
    let mut env = common::server_env(
        port,
        format!(
            "sqlite://{}",
            dir.join(format!("db-{port}.sqlite")).display()
        ),
        &plugins,
        &dir.join("cache"),
    );
    env.insert("LOANHOST_AUDIT_LOG".into(), audit.into());
    let config = Config::from_map(&env).unwrap();
    let (issuer, audience) = (config.idp.issuer.clone(), config.mcp_audience.clone());
    let key = SigningKey::load_or_create(&loanhost::app::dev_idp_key_path(&config)).unwrap();
    let app = Application::build(config).await.unwrap();
    let db = app.db();
    common::add_agent(&db).await;
    tokio::spawn(app.run_until_stopped());
    Server {
        url: format!("http://127.0.0.1:{port}/mcp"),
        token: key
            .mint(
                &issuer,
                "agent@example.com",
                &audience,
                "",
                Duration::from_secs(3600),
            )
            .unwrap(),
    }
}

fn bench(c: &mut Criterion) {
    let rt = common::runtime();
    let dir = tempfile::tempdir().unwrap();
    let audit_file = dir.path().join("audit.jsonl");
    let (off, on) = rt.block_on(async {
        (
            server(dir.path(), "off").await,
            server(dir.path(), audit_file.to_str().unwrap()).await,
        )
    });
    let client = reqwest::Client::new();
    let call = |s: &Server| {
        let (client, url, token) = (client.clone(), s.url.clone(), s.token.clone());
        async move {
            let r = common::tools_call(
                &client,
                &url,
                &token,
                "get_loan_reporting_metadata",
                json!({}),
            )
            .await;
            assert_eq!(r["result"]["isError"], false, "{r}");
        }
    };
    let mut group = c.benchmark_group("audit_overhead_tools_call_metadata");
    group.measurement_time(Duration::from_secs(8));
    for (name, s) in [("audit_off", &off), ("audit_file", &on)] {
        group.bench_function(name, |b| b.to_async(&rt).iter(|| call(s)));
    }
    group.finish();

    // Alternated rounds: each round calls one server then the other (the order switching
    // every round), so both see the same machine; the ratio of their totals is the figure.
    const ROUNDS: usize = 20;
    const CALLS: usize = 500;
    let mut totals = [Duration::ZERO; 2];
    for round in 0..ROUNDS {
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let s = [&off, &on][i];
            let started = std::time::Instant::now();
            rt.block_on(async {
                for _ in 0..CALLS {
                    call(s).await;
                }
            });
            totals[i] += started.elapsed();
        }
    }
    let per_call = |d: Duration| d.as_secs_f64() * 1e6 / (ROUNDS * CALLS) as f64;
    eprintln!(
        "audit_overhead summary ({ROUNDS} alternated rounds of {CALLS} calls each): audit off {:.1} µs, audit to a file {:.1} µs per call, ratio {:.3}",
        per_call(totals[0]),
        per_call(totals[1]),
        totals[1].as_secs_f64() / totals[0].as_secs_f64()
    );
    let lines = std::fs::read_to_string(&audit_file)
        .unwrap()
        .lines()
        .count();
    eprintln!("audit lines written: {lines}");
}

criterion_group!(benches, bench);
criterion_main!(benches);
