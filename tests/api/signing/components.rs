//! What a component may be before it runs: not one with many memories, not a planted or copied
//! precompiled entry, not another WIT major version, not a core module or garbage, not one
//! importing WASI or anything foreign, not bigger than its manifest allows; a refused import
//! costs no compilation.

use loanhost::clock::Clock;
use loanhost::plugins::{HostOptions, PluginFiles, Plugins, SignaturePolicy};
use serde_json::json;

use crate::helpers::{
    fixture_wasm, manifest, spawn_app_with, tool_manifest, tool_wasm, AppOptions, DEFAULT_ROLES,
};

#[tokio::test]
async fn a_component_with_many_memories_is_refused_at_load() {
    // Arrange: 120 core instances, each with its own linear memory (built here from text).
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("(component (core module $m (memory 1))");
    for i in 0..120 {
        text.push_str(&format!(" (core instance $i{i} (instantiate $m))"));
    }
    text.push(')');
    let wasm = wat::parse_str(&text).unwrap();
    std::fs::write(dir.path().join("hoard.wasm"), wasm).unwrap();
    std::fs::write(
        dir.path().join("hoard.toml"),
        manifest("hoard", DEFAULT_ROLES, &[], 16, 1000, 1000),
    )
    .unwrap();
    let plugins = Plugins::new(None, SignaturePolicy::default(), Clock::system()).unwrap();

    // Act
    let e = plugins
        .load(&PluginFiles::in_dir(dir.path(), "hoard"))
        .await
        .unwrap_err()
        .to_string();

    // Assert: refused before compiling, by the manifest's limit.
    assert!(
        e.ends_with("hoard.wasm: the component creates 120 core module instances; its manifest allows 8 (limits.core_instances: default 8, at most 64; a Python plugin built with componentize-py needs about 40)"),
        "{e}"
    );

    // Arrange: three instances each with a memory, within the instance limit.
    let wasm = wat::parse_str(
        "(component (core module $m (memory 1)) (core instance (instantiate $m)) (core instance (instantiate $m)) (core instance (instantiate $m)))",
    )
    .unwrap();
    std::fs::write(dir.path().join("hoard.wasm"), wasm).unwrap();
    // Act
    let e = plugins
        .load(&PluginFiles::in_dir(dir.path(), "hoard"))
        .await
        .unwrap_err()
        .to_string();
    // Assert: the host's ceiling on memories.
    assert!(
        e.ends_with("hoard.wasm: the component defines 3 linear memories; the host allows 2"),
        "{e}"
    );
}

#[tokio::test]
async fn a_planted_precompiled_component_is_not_run() {
    // Without the MAC, as an attacker without the key would write it.
    planted_entry_is_not_run(false).await;
}

#[tokio::test]
async fn an_authenticated_entry_copied_under_another_name_is_not_run() {
    // The whole entry, MAC included: the MAC binds the entry's name (digest and engine), so
    // a copy is no rollback to another build.
    planted_entry_is_not_run(true).await;
}

pub(super) async fn planted_entry_is_not_run(with_mac: bool) {
    // Arrange: a server has cached its metadata tool; an attacker who can write the cache
    // directory plants the metadata tool's native code under the name the `misbehave`
    // fixture will be looked up by.
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let key_file = dir.path().join("cache.key");
    let options = |name: &str, wasm: Vec<u8>, manifest: String| {
        let mut o = AppOptions::default().plugin(name, wasm, manifest);
        o.env
            .push(("LOANHOST_CACHE_DIR", cache.display().to_string()));
        o.env
            .push(("LOANHOST_CACHE_KEY_FILE", key_file.display().to_string()));
        o
    };
    let metadata = tool_wasm("get_loan_reporting_metadata");
    let first = spawn_app_with(options(
        "get_loan_reporting_metadata",
        metadata.clone(),
        tool_manifest("get_loan_reporting_metadata"),
    ))
    .await;
    drop(first);
    let cached: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
        .collect();
    assert_eq!(cached.len(), 1, "{cached:?}");
    let digest = |b: &[u8]| {
        use sha2::Digest as _;
        hex::encode(sha2::Sha256::digest(b))
    };
    let misbehave = fixture_wasm("misbehave");
    let compat = cached[0]
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .split_once('-')
        .unwrap()
        .1
        .to_string();
    let planted = cache.join(format!("{}-{compat}", digest(&misbehave)));
    let native = std::fs::read(&cached[0]).unwrap();
    let kept = if with_mac {
        native.len()
    } else {
        native.len() - 32
    };
    std::fs::write(&planted, &native[..kept]).unwrap();

    // Act
    let app = spawn_app_with(options(
        "misbehave",
        misbehave,
        manifest("misbehave", DEFAULT_ROLES, &[], 16, 2000, 65536),
    ))
    .await;

    // Assert: the fixture itself runs, not the planted code (which would describe itself as
    // the metadata tool and be refused, or worse, run).
    assert_eq!(app.tool_names().await, vec!["misbehave"]);
    let r = app
        .call_ok("agent-token", "misbehave", json!({"action": "echo"}))
        .await;
    assert_eq!(r["userId"], "00000000-0000-0000-0000-0000000000b2");
}

#[tokio::test]
async fn another_wit_major_version_is_refused_naming_both_versions() {
    // Arrange
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("future.wasm"), fixture_wasm("future-wit")).unwrap();
    std::fs::write(
        dir.path().join("future.toml"),
        manifest("future", DEFAULT_ROLES, &[], 16, 1000, 1000),
    )
    .unwrap();
    let plugins = Plugins::new(None, SignaturePolicy::default(), Clock::system()).unwrap();

    // Act
    let e = plugins
        .load(&PluginFiles::in_dir(dir.path(), "future"))
        .await
        .unwrap_err();

    // Assert
    assert!(e.to_string().ends_with("future.wasm: built against loan:reporting@2.0.0; this host supports loan:reporting@1.0.0, loan:reporting@1.1.0, loan:reporting@1.2.0"), "{e}");
}

#[tokio::test]
async fn a_core_module_or_garbage_is_refused_precisely() {
    // Arrange
    let dir = tempfile::tempdir().unwrap();
    let plugins = Plugins::new(None, SignaturePolicy::default(), Clock::system()).unwrap();
    std::fs::write(
        dir.path().join("get_loan_reporting_metadata.toml"),
        tool_manifest("get_loan_reporting_metadata"),
    )
    .unwrap();
    let files = PluginFiles::in_dir(dir.path(), "get_loan_reporting_metadata");

    // Act + Assert
    std::fs::write(&files.wasm, b"hello").unwrap();
    let e = plugins.load(&files).await.unwrap_err().to_string();
    assert!(
        e.ends_with("not a WebAssembly file (bad magic bytes)"),
        "{e}"
    );
    std::fs::write(&files.wasm, b"\0asm\x01\0\0\0").unwrap();
    let e = plugins.load(&files).await.unwrap_err().to_string();
    assert!(
        e.ends_with(
            "a core WebAssembly module, not a component (build with wasm-component-ld; see docs/plugins.md)"
        ),
        "{e}"
    );
}

#[tokio::test]
async fn a_component_importing_wasi_or_anything_foreign_is_refused() {
    // Arrange: components built here from text, importing a WASI interface and an interface
    // of some other package (no tool export needed: imports are checked first).
    let dir = tempfile::tempdir().unwrap();
    let plugins = Plugins::new(None, SignaturePolicy::default(), Clock::system()).unwrap();
    let load = |import: &str| {
        let wasm = wat::parse_str(format!("(component (import \"{import}\" (instance)))")).unwrap();
        std::fs::write(dir.path().join("sneaky.wasm"), wasm).unwrap();
        std::fs::write(
            dir.path().join("sneaky.toml"),
            manifest("sneaky", DEFAULT_ROLES, &[], 16, 1000, 1000),
        )
        .unwrap();
        let plugins = plugins.clone();
        let files = PluginFiles::in_dir(dir.path(), "sneaky");
        async move { plugins.load(&files).await.unwrap_err().to_string() }
    };

    // Act
    let wasi = load("wasi:filesystem/types@0.2.0").await;
    let foreign = load("loan:reporting/network@1.0.0").await;

    // Assert
    assert!(
        wasi.ends_with("sneaky.wasm: imports `wasi:filesystem/types@0.2.0`, which this host does not provide: plugins may import only the loan:reporting interfaces (types, caller, clock, log, data, listing, people, licensing, pricing); WASI is not offered to plugins: build with `componentize-py … componentize --stub-wasi` (Python), `jco componentize … --disable all` (JavaScript/TypeScript), or for Rust the wasm32-unknown-unknown target (scripts/build-plugin.sh does each)"),
        "{wasi}"
    );
    assert!(
        !foreign.contains("--stub-wasi"),
        "no WASI advice for a foreign import: {foreign}"
    );
    assert!(
        foreign
            .contains("imports `loan:reporting/network@1.0.0`, which this host does not provide"),
        "{foreign}"
    );
}

#[tokio::test]
async fn a_component_bigger_than_its_manifest_allows_is_refused_before_compiling() {
    // Arrange: a component of nine core instances (an interpreter-sized runtime has ~40), and
    // one whose memory starts at 20 MiB; manifests with the default limits, then raised ones.
    let dir = tempfile::tempdir().unwrap();
    let plugins = Plugins::new(None, SignaturePolicy::default(), Clock::system()).unwrap();
    let load = |body: String, memory_mib: u32, extra: &str| {
        let wasm = wat::parse_str(format!("(component {body})")).unwrap();
        std::fs::write(dir.path().join("big.wasm"), wasm).unwrap();
        let manifest = manifest("big", DEFAULT_ROLES, &[], memory_mib, 1000, 1000);
        std::fs::write(dir.path().join("big.toml"), format!("{manifest}{extra}")).unwrap();
        let plugins = plugins.clone();
        let files = PluginFiles::in_dir(dir.path(), "big");
        async move { plugins.load(&files).await.unwrap_err().to_string() }
    };
    let nine = format!(
        "(core module $m){}",
        "(core instance (instantiate $m))".repeat(9)
    );
    let big_memory = "(core module $m (memory 320)) (core instance (instantiate $m))".to_string();

    // Act
    let many = load(nine.clone(), 16, "").await;
    let allowed = load(nine, 16, "core_instances = 9\n").await;
    let memory = load(big_memory.clone(), 16, "").await;
    let enough = load(big_memory, 32, "").await;

    // Assert: refused with the number and the setting; once allowed, the check passes and the
    // load goes on (to fail later for want of a tool export).
    assert!(
        many.ends_with("big.wasm: the component creates 9 core module instances; its manifest allows 8 (limits.core_instances: default 8, at most 64; a Python plugin built with componentize-py needs about 40)"),
        "{many}"
    );
    assert!(allowed.contains("does not export"), "{allowed}");
    assert!(
        memory.ends_with("big.wasm: the component starts with 20 MiB of linear memory, more than its manifest's limits.memory_mib = 16 (a Python or JavaScript runtime starts with 10 to 15 MiB: give it at least 32)"),
        "{memory}"
    );
    assert!(enough.contains("does not export"), "{enough}");
}

#[tokio::test]
async fn a_refused_import_costs_no_compilation() {
    // Arrange: a host with a compile cache, and a component that imports WASI beside a module
    // (compiling a real interpreter's component takes tens of seconds).
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let mut options = HostOptions::new(SignaturePolicy::default(), Clock::system());
    options.cache_dir = Some(cache.clone());
    options.cache_key = Some([7; 32]);
    let plugins = Plugins::with_options(options).unwrap();
    let wasm = wat::parse_str(
        "(component (import \"wasi:cli/environment@0.2.0\" (instance)) (core module $m (func)) (core instance (instantiate $m)))",
    )
    .unwrap();
    std::fs::write(dir.path().join("wasi.wasm"), wasm).unwrap();
    std::fs::write(
        dir.path().join("wasi.toml"),
        manifest("wasi", DEFAULT_ROLES, &[], 16, 1000, 1000),
    )
    .unwrap();

    // Act
    let e = plugins
        .load(&PluginFiles::in_dir(dir.path(), "wasi"))
        .await
        .unwrap_err()
        .to_string();

    // Assert: refused with the flags named, from the bytes: nothing was compiled (a compiled
    // component would be in the cache).
    assert!(
        e.contains("imports `wasi:cli/environment@0.2.0`") && e.contains("--disable all"),
        "{e}"
    );
    let compiled = std::fs::read_dir(&cache)
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(compiled, 0, "the refused component was compiled");
}
