//! `report_loans` built three ways (Rust, plugins/tools; Python and TypeScript,
//! plugins/examples) side by side in one run, as the demo Agent (`groupBy: Status, metric:
//! Sum`, 39 buckets) on 20,000 seeded loans on SQLite:
//! 1. **in one process**: a host per build; the fresh instance's instantiation and the whole
//!    call, with the minor page faults of a call;
//! 2. **the profile**: the same calls in a profiling host ([`HostOptions::profile_calls`]) with
//!    the Python and TypeScript builds made with `LOANHOST_SDK_PROFILE=1`, whose SDKs mark
//!    their stages: where a call's time goes, stage by stage;
//! 3. **through servers over HTTP**, as a caller sees it: one `loanhost serve` process per
//!    build (only its `report_loans`), a process with the six shipped Rust tools idle, one with
//!    those six plus a Python and a TypeScript plugin after 1,000 calls, and the same report as
//!    a native Python MCP server on the official SDK (`languages/native_mcp_server.py`) on the
//!    same SQLite file; their resident memory from /proc;
//! 4. **edit to served** for the Python and TypeScript examples: `loanhost plugin watch`
//!    deploying into a server's folder, from a saved edit to the edited build served
//!    (`languages/edit.rs`).
//!
//! Every build's answer is checked equal to the Rust build's first (the native server's too).
//! The examples are built first (`scripts/build-plugins.sh` with `LOANHOST_BUILD_EXAMPLES=1`).
//! `LANGUAGES_CALLS` sets the calls measured per build (default 400, after 40 warm-up calls);
//! `LANGUAGES_ONLY=python` (or `typescript`) measures Rust and that language alone;
//! `LANGUAGES_SERVED=0` skips the servers and the edits (the in-process figures and the profile
//! only).

mod common;
#[path = "languages/edit.rs"]
mod edit;
#[path = "languages/served.rs"]
mod served;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use loanhost::clock::Clock;
use loanhost::data::Db;
use loanhost::plugins::{HostOptions, PluginFiles, Plugins, SignaturePolicy};
use serde_json::{json, Value};

use served::{mean, ms, percentile};

/// The profile's stages: the mark that ends each, and what happened before it.
const STAGES: [(&str, &str); 11] = [
    ("instantiated", "instantiate a fresh instance"),
    ("entered", "guest start, to the SDK's export"),
    ("arguments", "arguments parsed and checked"),
    ("data-entered", "query built, to the data import"),
    ("data-left", "data capability: scope, SQL, rows (host)"),
    (
        "rows-lifted",
        "rows into the guest: canonical ABI, bindings",
    ),
    ("rows-decoded", "rows decoded by the SDK"),
    ("reported", "the report's own code"),
    ("serialised", "result serialised to JSON text"),
    ("returned", "result to the host: canonical ABI, post-return"),
    ("host", "host around the plugin: admission, checks"),
];

fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Minor page faults of this thread so far (the calls of a compiled plugin run on it:
/// `block_on`).
fn minor_faults() -> i64 {
    // SAFETY: `getrusage` fills the zeroed struct it is given.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut usage);
        usage.ru_minflt
    }
}

/// Builds one plugin folder with `scripts/build-plugin.sh` into `out`.
fn build_one(dir: &Path, out: &Path, profile: bool) {
    let status = std::process::Command::new(loanhost_tests::root().join("scripts/build-plugin.sh"))
        .arg(dir)
        .arg(out)
        .env("LOANHOST_SDK_PROFILE", if profile { "1" } else { "" })
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "building {} failed", dir.display());
}

/// A copy of an example's sources (manifest, `plugin.py` or `src/plugin.ts`) in `dir`, as the
/// tool `name` (the example's `report_loans` renamed); returns the copied source file.
fn copy_example(example: &Path, name: &str, dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let rename = |from: &Path, to: &Path| {
        let text = std::fs::read_to_string(from).unwrap();
        std::fs::write(to, text.replace("\"report_loans\"", &format!("\"{name}\""))).unwrap();
    };
    rename(
        &example.join("report_loans.toml"),
        &dir.join(format!("{name}.toml")),
    );
    let file = ["plugin.py", "src/plugin.ts"]
        .into_iter()
        .find(|file| example.join(file).exists())
        .expect("an example in Python or TypeScript");
    rename(&example.join(file), &dir.join(file));
    dir.join(file)
}

/// A copy of an example under another tool name (for a host that serves it beside the Rust
/// `report_loans`), built into `out`.
fn build_renamed(example: &Path, name: &str, scratch: &Path, out: &Path) {
    let dir = scratch.join("renamed").join(name);
    copy_example(example, name, &dir);
    build_one(&dir, out, false);
}

struct InProcess {
    language: &'static str,
    load: Duration,
    shape: loanhost::plugins::Shape,
    instantiate: Vec<Duration>,
    whole: Vec<Duration>,
    faults: f64,
    answer: Value,
    /// Mean time per stage of the profiled calls, in [`STAGES`] order; `None`: not marked.
    stages: Vec<Option<Duration>>,
    profiled_whole: Duration,
}

fn host(db: &Db, cache: &Path, key: [u8; 32], profile: bool) -> Arc<Plugins> {
    let mut options = HostOptions::new(
        SignaturePolicy::default(),
        Clock::fixed(loanhost::config::parse_date("2026-11-22").unwrap()),
    );
    options.db = Some(db.clone());
    options.cache_dir = Some(cache.to_path_buf());
    options.cache_key = Some(key);
    options.callers = common::unlimited_callers();
    options.profile_calls = profile;
    Plugins::with_options(options).unwrap()
}

/// The servers of act 3 run as a user runs them; the memory and edit steps call more than a
/// user's budgets allow.
const AS_USER: served::Setup = served::Setup::AsUsersRunIt;
const LIFTED: served::Setup = served::Setup::Lifted;

fn main() {
    // Arrange: the three builds, and the Python and TypeScript ones again with stage marks.
    let scratch = tempfile::tempdir().unwrap();
    let build = scratch.path().join("build");
    let status =
        std::process::Command::new(loanhost_tests::root().join("scripts/build-plugins.sh"))
            .arg(scratch.path().join("dist"))
            .arg(&build)
            .env("LOANHOST_BUILD_EXAMPLES", "1")
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
    assert!(status.success(), "building the plugins failed");
    let only = std::env::var("LANGUAGES_ONLY")
        .unwrap_or_default()
        .to_lowercase();
    let examples = loanhost_tests::root().join("plugins/examples");
    for language in ["python", "typescript"] {
        if !only.is_empty() && only != language {
            continue;
        }
        build_one(
            &examples.join(language).join("report_loans"),
            &build.join("profile").join(language),
            true,
        );
    }
    let mut builds: Vec<(&str, PathBuf, PathBuf)> = vec![
        ("Rust", build.clone(), build.clone()),
        (
            "Python",
            build.join("examples/python"),
            build.join("profile/python"),
        ),
        (
            "TypeScript",
            build.join("examples/typescript"),
            build.join("profile/typescript"),
        ),
    ];
    builds.retain(|(l, _, _)| *l == "Rust" || only.is_empty() || only == l.to_lowercase());

    let rt = common::runtime();
    let home = PathBuf::from(std::env::var("HOME").unwrap_or_default());
    let bench = home.join(".cache/loanhost/bench");
    let cache = bench.join("compiled");
    std::fs::create_dir_all(&cache).unwrap();
    let key = loanhost::plugins::load_or_create_cache_key(&bench.join("compiled.key")).unwrap();
    let db_file = scratch.path().join("bench.db");
    let db = rt.block_on(async {
        let db = Db::open(&format!("sqlite://{}", db_file.display()))
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
        .block_on(db.agent_by_email(served::AGENT))
        .unwrap()
        .expect("the seeded demo agent");
    let caller = agent.identity();
    let calls: usize = std::env::var("LANGUAGES_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    let args = json!({"groupBy": "Status", "metric": "Sum"});

    // Act 1 and 2: in one process, then profiled.
    let rss_start = rss_mib();
    let mut lines = Vec::new();
    let mut hosts = Vec::new();
    for (language, dir, profile_dir) in &builds {
        let plugins = host(&db, &cache, key, false);
        let started = Instant::now();
        let plugin = rt
            .block_on(plugins.load(&PluginFiles::in_dir(dir, "report_loans")))
            .unwrap_or_else(|e| panic!("{language}: {e}"));
        let load = started.elapsed();
        let shape = plugin.shape.clone();
        plugins.registry().insert(Arc::new(plugin));
        let mut answer = Value::Null;
        for _ in 0..40 {
            answer = rt
                .block_on(plugins.call("report_loans", &caller, &args))
                .unwrap();
        }
        let (mut instantiate, mut whole) = (Vec::new(), Vec::new());
        // An interpreter's plugin runs on a thread of its own: its faults are in the report.
        let (faults, mut on_own_thread) = (minor_faults(), 0);
        for _ in 0..calls {
            let (out, report) = rt.block_on(plugins.call_reported("report_loans", &caller, &args));
            out.unwrap();
            instantiate.push(report.timing.instantiate);
            whole.push(report.duration);
            on_own_thread += report.timing.minor_faults.unwrap_or(0) as i64;
        }
        let faults = (minor_faults() - faults + on_own_thread) as f64 / calls as f64;
        instantiate.sort();
        whole.sort();

        let profiled = host(&db, &cache, key, true);
        let plugin = rt
            .block_on(profiled.load(&PluginFiles::in_dir(profile_dir, "report_loans")))
            .unwrap_or_else(|e| panic!("{language} (profile build): {e}"));
        profiled.registry().insert(Arc::new(plugin));
        let mut sums = vec![Duration::ZERO; STAGES.len()];
        let mut seen = vec![false; STAGES.len()];
        let mut profiled_whole = Vec::new();
        for i in 0..(40 + calls) {
            let (out, report) = rt.block_on(profiled.call_reported("report_loans", &caller, &args));
            assert_eq!(
                out.unwrap().to_value().unwrap(),
                answer,
                "{language}: profile build"
            );
            if i < 40 {
                continue;
            }
            let mut last = Duration::ZERO;
            for m in &report.timing.marks {
                let k = STAGES
                    .iter()
                    .position(|(s, _)| *s == m.stage)
                    .unwrap_or_else(|| panic!("{language}: unknown stage mark {}", m.stage));
                sums[k] += m.at - last;
                seen[k] = true;
                last = m.at;
            }
            sums[STAGES.len() - 1] += report.duration.saturating_sub(last);
            seen[STAGES.len() - 1] = true;
            profiled_whole.push(report.duration);
        }
        lines.push(InProcess {
            language,
            load,
            shape,
            instantiate,
            whole,
            faults,
            answer,
            stages: sums
                .iter()
                .zip(&seen)
                .map(|(s, seen)| seen.then(|| *s / calls as u32))
                .collect(),
            profiled_whole: mean(&profiled_whole),
        });
        hosts.push((plugins, profiled));
    }
    let rss_loaded = rss_mib();
    drop(hosts);
    for l in &lines[1..] {
        assert_eq!(
            l.answer, lines[0].answer,
            "{} answers differently from Rust",
            l.language
        );
    }
    print_in_process(&lines, calls, rss_start, rss_loaded);

    if std::env::var("LANGUAGES_SERVED").is_ok_and(|v| v == "0") {
        return;
    }

    // Act 3: through servers over HTTP.
    let client = reqwest::Client::new();
    let served_cache = bench.join("served-compiled");
    // A first start compiles everything: no functions kept from an earlier run. The edits
    // (act 4) then find the functions these servers compiled, as a team's second build would.
    let _ = std::fs::remove_dir_all(served_cache.join("functions"));
    let logs = scratch.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let mut rows = Vec::new();
    rt.block_on(async {
        for (language, dir, _) in &builds {
            // The folder `make plugins` writes: an interpreter's examples are `report_loans`
            // and `query_loans`, served together as a user serves the folder.
            let mut tools: Vec<(&Path, &str)> = vec![(dir.as_path(), "report_loans")];
            if *language != "Rust" {
                tools.push((dir.as_path(), "query_loans"));
            }
            let plugins =
                served::plugin_dir(&scratch.path().join(format!("served-{language}")), &tools);
            let log = logs.join(format!("{language}.log"));
            let server =
                served::loanhost(&client, &db_file, &plugins, &served_cache, &log, AS_USER).await;
            let expected = &lines[0].answer;
            let name = format!("loanhost, {language}");
            rows.push(served::row(&client, &server, name, &args, expected, calls).await);
            if *language == "Rust" {
                // The same report as a native Python MCP server, trusting this server's tokens.
                let log = logs.join("native.log");
                let python = loanhost_tests::root().join(".venv/bin/python");
                let native =
                    served::native(&client, &python, &db_file, &server, scratch.path(), &log).await;
                let name = "native Python MCP server".to_string();
                rows.push(served::row(&client, &native, name, &args, expected, calls).await);
            } else {
                // Started again: the build is read from the compile cache this time.
                drop(server);
                let log = logs.join(format!("{language}-again.log"));
                let again =
                    served::loanhost(&client, &db_file, &plugins, &served_cache, &log, AS_USER)
                        .await;
                let name = "  restarted, from the cache".to_string();
                rows.push(served::row(&client, &again, name, &args, expected, calls).await);
            }
        }
    });
    served::print(&rows, calls);
    let (six, mixed) = rt.block_on(memory_of_hosts(
        &client,
        scratch.path(),
        &build,
        &db_file,
        &served_cache,
        &logs,
    ));
    println!("  a host with the six shipped Rust tools, idle after start: {six:.0} MiB resident");
    println!(
        "  a host with those six plus report_loans in Python and in TypeScript, after 1,000 calls (the three report_loans in turn): {mixed:.0} MiB resident"
    );

    // Act 4: edit to served.
    let mut edits = Vec::new();
    for (language, _, _) in &builds[1..] {
        let language = if *language == "Python" {
            "Python"
        } else {
            "TypeScript"
        };
        let example = examples.join(language.to_lowercase()).join("report_loans");
        edits.push(rt.block_on(edit::edit_to_served(
            &client,
            language,
            &example,
            &db_file,
            &served_cache,
            scratch.path(),
            &logs,
        )));
    }
    edit::print(&edits);
}

/// Resident memory of a host serving the six shipped tools, idle; and of one serving them
/// plus the Python and TypeScript reports (renamed) after 1,000 calls.
async fn memory_of_hosts(
    client: &reqwest::Client,
    scratch: &Path,
    build: &Path,
    db_file: &Path,
    cache: &Path,
    logs: &Path,
) -> (f64, f64) {
    let shipped = scratch.join("dist");
    let six = served::loanhost(
        client,
        db_file,
        &shipped,
        cache,
        &logs.join("six.log"),
        LIFTED,
    )
    .await;
    let idle = six.rss_mib();
    drop(six);
    let renamed = build.join("renamed");
    let examples = loanhost_tests::root().join("plugins/examples");
    build_renamed(
        &examples.join("python/report_loans"),
        "report_loans_python",
        scratch,
        &renamed,
    );
    build_renamed(
        &examples.join("typescript/report_loans"),
        "report_loans_typescript",
        scratch,
        &renamed,
    );
    let dir = scratch.join("mixed");
    let mut tools: Vec<(&Path, &str)> = vec![
        (&renamed, "report_loans_python"),
        (&renamed, "report_loans_typescript"),
    ];
    let names: Vec<String> = std::fs::read_dir(&shipped)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            (p.extension()? == "wasm").then(|| p.file_stem()?.to_str().map(str::to_string))?
        })
        .collect();
    tools.extend(names.iter().map(|n| (shipped.as_path(), n.as_str())));
    let plugins = served::plugin_dir(&dir, &tools);
    let mixed = served::loanhost(
        client,
        db_file,
        &plugins,
        cache,
        &logs.join("mixed.log"),
        LIFTED,
    )
    .await;
    let args = json!({"groupBy": "Status", "metric": "Sum"});
    for i in 0..1000 {
        let tool = [
            "report_loans",
            "report_loans_python",
            "report_loans_typescript",
        ][i % 3];
        served::call(client, &mixed, tool, &args).await;
    }
    (idle, mixed.rss_mib())
}

fn print_in_process(lines: &[InProcess], calls: usize, rss_start: f64, rss_loaded: f64) {
    let rust_whole = mean(&lines[0].whole).as_secs_f64();
    println!("languages, in one process (report_loans as the demo Agent, groupBy Status, Sum; 20,000 seeded loans on SQLite; {calls} calls each after 40 warm-up):");
    println!("  build        load (compile or cache)  core inst.  initial/image MiB  instantiate mean/p50/p99       whole call mean/p50   vs Rust  page faults/call");
    for l in lines {
        let whole = mean(&l.whole);
        println!(
            "  {:<11}  {:>10.2} s             {:>4}        {:>5} / {:<5}      {:>7.3} / {:>7.3} / {:>7.3} ms   {:>7.3} / {:>7.3} ms   {:>5.2}x  {:>6.0}",
            l.language,
            l.load.as_secs_f64(),
            l.shape.core_instances,
            l.shape.initial_memory_mib(),
            l.shape.image_memory_mib(),
            ms(mean(&l.instantiate)),
            ms(percentile(&l.instantiate, 0.5)),
            ms(percentile(&l.instantiate, 0.99)),
            ms(whole),
            ms(percentile(&l.whole, 0.5)),
            whole.as_secs_f64() / rust_whole,
            l.faults,
        );
    }
    println!("  host RSS: {rss_start:.0} MiB before loading, {rss_loaded:.0} MiB with the three loaded and called (a host each, and a profiling host each)");
    println!("languages profile: mean ms per stage of {calls} profiled calls (Python and TypeScript: builds with LOANHOST_SDK_PROFILE=1; Rust: the host's marks only, a stage it cannot see is counted in the next one):");
    println!(
        "  {:<48} {}",
        "stage (ends at mark)",
        lines
            .iter()
            .map(|l| format!("{:>11}", l.language))
            .collect::<String>()
    );
    for (k, (mark, what)) in STAGES.iter().enumerate() {
        let cells: String = lines
            .iter()
            .map(|l| match l.stages[k] {
                Some(d) => format!("{:>11.3}", ms(d)),
                None => format!("{:>11}", "·"),
            })
            .collect();
        println!("  {:<48} {cells}", format!("{what} ({mark})"));
    }
    let totals: String = lines
        .iter()
        .map(|l| format!("{:>11.3}", ms(l.profiled_whole)))
        .collect();
    println!("  {:<48} {totals}", "whole profiled call");
}
