//! One plugin call end to end inside the host: fresh `Store` from the cached `InstancePre`,
//! instantiate, call, host imports, result check. Needs the built plugins (`make plugins`).

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use loanhost::auth::{Identity, RoleCode};
use loanhost::clock::Clock;
use loanhost::plugins::{HostOptions, PluginFiles, Plugins, SignaturePolicy};
use serde_json::json;

fn plugin_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../plugins/dist")
}

fn fixture(name: &str) -> PathBuf {
    let target = std::env::var("PLUGIN_TARGET_DIR").unwrap_or_else(|_| {
        format!(
            "{}/.cache/loanhost/plugins-target",
            std::env::var("HOME").unwrap_or_default()
        )
    });
    PathBuf::from(target)
        .join("wasm32-unknown-unknown/release")
        .join(format!("fixture_{name}.wasm"))
}

fn bench(c: &mut Criterion) {
    let rt = common::runtime();
    // One caller calls as fast as it can here: lift the per-caller budgets (the attack
    // suite measures them).
    let mut options = HostOptions::new(SignaturePolicy::default(), Clock::system());
    options.callers = common::unlimited_callers();
    let plugins = Plugins::with_options(options).unwrap();

    // The shipped metadata tool (no host imports).
    let dir = plugin_dir();
    let metadata = rt
        .block_on(plugins.load(&PluginFiles::in_dir(&dir, "get_loan_reporting_metadata")))
        .expect("run `make plugins` first");
    plugins.registry().insert(Arc::new(metadata));

    // The echo action of the misbehave fixture crosses into the host four times.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(fixture("misbehave"), tmp.path().join("misbehave.wasm"))
        .expect("fixture built by `make plugins`");
    std::fs::write(
        tmp.path().join("misbehave.toml"),
        "name = \"misbehave\"\nwit_version = \"1.2.0\"\nroles = [\"Agent\"]\ndatasets = []\nscope = \"caller\"\n[limits]\nmemory_mib = 16\ntimeout_ms = 1000\nmax_output_bytes = 65536\n",
    )
    .unwrap();
    let echo = rt
        .block_on(plugins.load(&PluginFiles::in_dir(tmp.path(), "misbehave")))
        .unwrap();
    plugins.registry().insert(Arc::new(echo));

    let caller = Identity::new("00000000-0000-0000-0000-0000000000b2", [RoleCode::Agent]);
    let empty = json!({});
    let echo_args = json!({"action": "echo"});

    let mut group = c.benchmark_group("plugin_call");
    group.bench_function(
        "metadata (store + instantiate + call + 2 KiB result)",
        |b| {
            b.to_async(&rt).iter(|| async {
                plugins
                    .call("get_loan_reporting_metadata", &caller, &empty)
                    .await
                    .unwrap()
            })
        },
    );
    group.bench_function("echo (store + instantiate + call + 4 host imports)", |b| {
        b.to_async(&rt).iter(|| async {
            plugins
                .call("misbehave", &caller, &echo_args)
                .await
                .unwrap()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
