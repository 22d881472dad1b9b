//! Compiled functions kept between compilations (`docs/operations.md`, "Compile cache"): a
//! rebuilt plugin reuses the functions an earlier compilation kept, whether a worker compiled
//! the first build (`plugin check`) or the host did in its own process, and an entry that the
//! host's key does not authenticate is never used. (How many are reused varies from one
//! compilation to the next: Cranelift's key for a few percent of the functions differs between
//! two compilations of the same code, `docs/decisions/0041-compiled-function-cache.md`; the
//! tests assert what holds for every compilation.)

use std::path::Path;

use loanhost::clock::Clock;
use loanhost::plugins::{Compiler, HostOptions, PluginFiles, Plugins, SignaturePolicy};
use loanhost::telemetry::Label;
use serde_json::json;

use crate::helpers::{loanhost_binary, spawn_app_with, tool_manifest, tool_wasm, AppOptions};

const TOOL: &str = "get_loan_reporting_metadata";

/// `wasm` with a custom section named `note` appended: another component (another digest, so
/// the whole-component cache has no entry for it) with the very same functions, as a rebuild
/// that changed none of them.
fn rebuilt(wasm: &[u8], note: &str) -> Vec<u8> {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            out.push(if n == 0 { byte } else { byte | 0x80 });
            if n == 0 {
                break;
            }
        }
    }
    let mut section = Vec::new();
    leb(note.len(), &mut section);
    section.extend_from_slice(note.as_bytes());
    section.extend_from_slice(b"rebuilt");
    let mut out = wasm.to_vec();
    out.push(0);
    leb(section.len(), &mut out);
    out.extend_from_slice(&section);
    out
}

/// The tool's files in `dir` with `wasm` as its component.
fn plugin_in(dir: &Path, wasm: &[u8]) -> PluginFiles {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(format!("{TOOL}.wasm")), wasm).unwrap();
    std::fs::write(dir.join(format!("{TOOL}.toml")), tool_manifest(TOOL)).unwrap();
    PluginFiles::in_dir(dir, TOOL)
}

/// `loanhost plugin check` of the tool's shipped build with `cache` as the compile cache.
fn check_with_cache(dir: &Path, cache: &Path) {
    let plugin = plugin_in(&dir.join("checked"), &tool_wasm(TOOL));
    let checked = std::process::Command::new(loanhost_binary().expect("the loanhost binary"))
        .args(["plugin", "check"])
        .args([&plugin.wasm, &plugin.manifest])
        .env("LOANHOST_CACHE_DIR", cache)
        .env("XDG_CACHE_HOME", dir.join("user-cache"))
        .output()
        .unwrap();
    assert!(checked.status.success(), "{checked:?}");
}

/// The function entries in `cache`.
fn entries(cache: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(cache.join("functions"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// A server on `cache` serving the tool rebuilt as `note` (checked to answer): its functions
/// (reused, compiled, refused) as its metrics count them.
async fn serve_rebuilt(cache: &Path, note: &str) -> [f64; 3] {
    let (mut options, port) = AppOptions::default()
        .plugin(TOOL, rebuilt(&tool_wasm(TOOL), note), tool_manifest(TOOL))
        .with_metrics();
    options
        .env
        .push(("LOANHOST_CACHE_DIR", cache.display().to_string()));
    let app = spawn_app_with(options).await;
    let metrics = crate::metrics::scrape(&app, port).await;
    let count = |series: &str| metrics.get(series).copied();
    assert_eq!(
        count("loanhost_plugin_compilations_total{kind=\"compiled\"}"),
        Some(1.0),
        "the rebuilt component is compiled, not read whole from the cache: {metrics:?}"
    );
    let reply = app.call_ok("agent-token", TOOL, json!({})).await;
    assert!(reply["statuses"].is_array(), "{reply}");
    ["reused", "compiled", "refused"].map(|kind| {
        count(&format!(
            "loanhost_plugin_compiled_functions_total{{kind=\"{kind}\"}}"
        ))
        .unwrap_or_else(|| panic!("no {kind} count: {metrics:?}"))
    })
}

#[tokio::test]
async fn a_rebuilt_plugin_reuses_the_functions_a_checked_build_compiled() {
    // Arrange: `plugin check` compiles the shipped build in its worker, with the server's
    // compile cache.
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    check_with_cache(dir.path(), &cache);
    assert!(!entries(&cache).is_empty(), "the worker kept its functions");

    // Act: a server on that cache serving a rebuild whose functions are all the same.
    let [reused, compiled, refused] = serve_rebuilt(&cache, "one").await;

    // Assert: compiled as a new component, with functions the worker kept; none refused.
    assert!(reused > 0.0, "{reused} reused, {compiled} compiled");
    assert_eq!(refused, 0.0);
}

#[tokio::test]
async fn function_entries_the_key_does_not_authenticate_are_compiled_again() {
    // Arrange: the checked build's functions, each altered on disk (planted or corrupt).
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    check_with_cache(dir.path(), &cache);
    for entry in entries(&cache) {
        let mut bytes = std::fs::read(&entry).unwrap();
        bytes[0] ^= 1;
        std::fs::write(&entry, bytes).unwrap();
    }

    // Act
    let [reused, compiled, refused] = serve_rebuilt(&cache, "two").await;

    // Assert: the altered entries were refused and their functions compiled (a function
    // reused can only be one this compilation itself kept: a component may hold the same
    // function twice); the component serves.
    assert!(refused > 0.0, "{reused} reused, {compiled} compiled");
    assert!(
        compiled >= refused && compiled > reused,
        "{reused} reused, {compiled} compiled"
    );
}

#[tokio::test]
async fn a_host_compiling_in_its_own_process_reuses_functions_too() {
    // Arrange: a host that compiles on its own threads, with a compile cache.
    let dir = tempfile::tempdir().unwrap();
    let mut options = HostOptions::new(SignaturePolicy::default(), Clock::system());
    options.cache_dir = Some(dir.path().join("cache"));
    options.cache_key = Some([5; 32]);
    options.compiler = Compiler::InProcess;
    let plugins = Plugins::with_options(options).unwrap();
    let counted = |kind: &str| {
        plugins
            .metrics()
            .plugin_compiled_functions
            .get_or_create(&Label { kind: kind.into() })
            .get()
    };
    let wasm = tool_wasm(TOOL);

    // Act: two builds with the same functions.
    plugins
        .load(&plugin_in(&dir.path().join("a"), &rebuilt(&wasm, "a")))
        .await
        .unwrap();
    let first = (counted("reused"), counted("compiled"));
    let kept = entries(&dir.path().join("cache")).len() as u64;
    plugins
        .load(&plugin_in(&dir.path().join("b"), &rebuilt(&wasm, "b")))
        .await
        .unwrap();
    let second = (counted("reused") - first.0, counted("compiled") - first.1);

    // Assert: the first build compiled its functions and kept them; the second reused some,
    // and asked for as many.
    assert!(first.1 > 0 && kept > 0, "{first:?}, {kept} kept");
    assert!(second.0 > 0, "{second:?}");
    assert_eq!(second.0 + second.1, first.0 + first.1);
    assert_eq!(counted("refused"), 0);
}
