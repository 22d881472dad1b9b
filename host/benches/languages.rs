//! `report_loans` built three ways (Rust, plugins/tools; Python and TypeScript,
//! plugins/examples) side by side in one run, inside one host process: the per-call
//! instantiation of a fresh instance (from the copy-on-write image, with the pooling
//! allocator), an Agent's whole call (instantiate, run, the `data` query on SQLite, the result),
//! and the host's resident memory with all three loaded. The examples are built first
//! (`scripts/build-plugins.sh` with `LOANHOST_BUILD_EXAMPLES=1`); their compiled components are
//! cached in `~/.cache/loanhost/bench/compiled`, so only the first run compiles them.
//!
//! `LANGUAGES_CALLS` sets the calls measured per build (default 400, after 40 warm-up calls).

mod common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use loanhost::clock::Clock;
use loanhost::data::Db;
use loanhost::plugins::{HostOptions, PluginFiles, Plugins, SignaturePolicy};
use serde_json::json;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    // Arrange: the three builds.
    let scratch = tempfile::tempdir().unwrap();
    let build = scratch.path().join("build");
    let status = std::process::Command::new(root().join("scripts/build-plugins.sh"))
        .arg(scratch.path().join("dist"))
        .arg(&build)
        .env("LOANHOST_BUILD_EXAMPLES", "1")
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "building the plugins failed");
    let builds: [(&str, PathBuf); 3] = [
        ("Rust", build.clone()),
        ("Python", build.join("examples/python")),
        ("TypeScript", build.join("examples/typescript")),
    ];

    let rt = common::runtime();
    let home = PathBuf::from(std::env::var("HOME").unwrap_or_default());
    let cache = home.join(".cache/loanhost/bench/compiled");
    std::fs::create_dir_all(&cache).unwrap();
    let key = loanhost::plugins::load_or_create_cache_key(
        &home.join(".cache/loanhost/bench/compiled.key"),
    )
    .unwrap();
    let db = rt.block_on(async {
        let db = Db::open(&format!(
            "sqlite://{}",
            scratch.path().join("bench.db").display()
        ))
        .await
        .unwrap();
        let seed = scratch.path().join("seed");
        let spec = loanhost::data::seed::SeedSpec {
            loans: 20_000,
            seed: 1,
            today: loanhost::config::parse_date("2026-11-22").unwrap(),
        };
        loanhost::data::seed::write_dir(spec, &seed).unwrap();
        loanhost::data::import::import_dir(&db, &seed, |_, _| {})
            .await
            .unwrap();
        db
    });
    let agent = rt
        .block_on(db.agent_by_email("agent@demo.loanhost.local"))
        .unwrap()
        .expect("the seeded demo agent");
    let caller = agent.identity();
    let calls: usize = std::env::var("LANGUAGES_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    let args = json!({"groupBy": "Status", "metric": "Sum"});

    let rss_start = rss_mib();
    let mut hosts = Vec::new();
    let mut lines = Vec::new();
    for (language, dir) in &builds {
        let mut options = HostOptions::new(
            SignaturePolicy::default(),
            Clock::fixed(loanhost::config::parse_date("2026-11-22").unwrap()),
        );
        options.db = Some(db.clone());
        options.cache_dir = Some(cache.clone());
        options.cache_key = Some(key);
        options.callers = common::unlimited_callers();
        let plugins = Plugins::with_options(options).unwrap();
        let started = Instant::now();
        let plugin = rt
            .block_on(plugins.load(&PluginFiles::in_dir(dir, "report_loans")))
            .unwrap_or_else(|e| panic!("{language}: {e}"));
        let load = started.elapsed();
        let shape = plugin.shape.clone();
        plugins.registry().insert(Arc::new(plugin));

        // Act: warm up, then measure.
        let mut answer = None;
        for _ in 0..40 {
            answer = Some(
                rt.block_on(plugins.call("report_loans", &caller, &args))
                    .unwrap(),
            );
        }
        let mut instantiate = Vec::with_capacity(calls);
        let mut whole = Vec::with_capacity(calls);
        for _ in 0..calls {
            let (out, report) = rt.block_on(plugins.call_reported("report_loans", &caller, &args));
            out.unwrap();
            instantiate.push(report.instantiate);
            whole.push(report.duration);
        }
        instantiate.sort();
        whole.sort();
        let mean = |v: &[Duration]| v.iter().sum::<Duration>() / v.len() as u32;
        lines.push((
            *language,
            load,
            shape,
            mean(&instantiate),
            percentile(&instantiate, 0.5),
            percentile(&instantiate, 0.99),
            mean(&whole),
            percentile(&whole, 0.5),
            answer.unwrap(),
        ));
        hosts.push(plugins);
    }
    let rss_loaded = rss_mib();

    // Assert: the same answer from the three builds.
    for l in &lines[1..] {
        assert_eq!(l.8, lines[0].8, "{} answers differently from Rust", l.0);
    }
    let rust_whole = lines[0].6.as_secs_f64();
    println!("languages summary (report_loans as the demo Agent, groupBy Status, Sum; 20,000 seeded loans on SQLite; {calls} calls each after 40 warm-up):");
    println!("  build        load (compile or cache)  core inst.  initial/image MiB  instantiate mean/p50/p99       whole call mean/p50   vs Rust");
    for (language, load, shape, im, ip50, ip99, wm, wp50, _) in &lines {
        println!(
            "  {language:<11}  {:>10.2} s             {:>4}        {:>5} / {:<5}      {:>7.3} / {:>7.3} / {:>7.3} ms   {:>7.3} / {:>7.3} ms   {:.2}x",
            load.as_secs_f64(),
            shape.core_instances,
            shape.initial_memory_mib(),
            shape.image_memory_mib(),
            im.as_secs_f64() * 1e3,
            ip50.as_secs_f64() * 1e3,
            ip99.as_secs_f64() * 1e3,
            wm.as_secs_f64() * 1e3,
            wp50.as_secs_f64() * 1e3,
            wm.as_secs_f64() / rust_whole,
        );
    }
    println!(
        "  host RSS: {rss_start:.0} MiB before loading, {rss_loaded:.0} MiB with the three loaded and called ({} hosts)",
        hosts.len()
    );
}
