//! What a plugin's files may cost the host before it serves anything
//! (`docs/threat-model.md`, "Per component"): tables counted and charged as memory at load,
//! files over their size refused unread, a component that exports no tool refused before it is
//! compiled, compilation in a worker process bounded in memory and time, and the compile cache
//! bounded on disk.

use std::path::Path;
use std::time::Duration;

use loanhost::clock::Clock;
use loanhost::plugins::SignaturePolicy;
use loanhost::plugins::{CompileLimits, Compiler, HostOptions, PluginFiles, Plugins};

use crate::helpers::{
    example_plugin, loanhost_binary, manifest, spawn_app_with, tool_manifest, tool_view, tool_wasm,
    AppOptions, DEFAULT_ROLES,
};

/// A host whose components are compiled in worker processes under `limits`, with a compile
/// cache in `cache`.
fn host(limits: CompileLimits, cache: &Path) -> std::sync::Arc<Plugins> {
    let mut options = cached(cache);
    options.compiler = Compiler::Isolated {
        program: loanhost_binary().expect("cargo builds the loanhost binary for the tests"),
        limits,
    };
    Plugins::with_options(options).unwrap()
}

/// A host's settings with a compile cache in `cache`.
fn cached(cache: &Path) -> HostOptions {
    let mut options = HostOptions::new(SignaturePolicy::default(), Clock::system());
    options.cache_dir = Some(cache.to_path_buf());
    options.cache_key = Some([9; 32]);
    options
}

/// Writes `name.wasm` and `name.toml` into `dir` and loads them; the refusal, or `Ok`.
async fn load(
    plugins: &Plugins,
    dir: &Path,
    name: &str,
    wasm: &[u8],
    toml: &str,
) -> Result<(), String> {
    std::fs::write(dir.join(format!("{name}.wasm")), wasm).unwrap();
    std::fs::write(dir.join(format!("{name}.toml")), toml).unwrap();
    plugins
        .load(&PluginFiles::in_dir(dir, name))
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

fn compiled_entries(cache: &Path) -> usize {
    std::fs::read_dir(cache)
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
                .count()
        })
        .unwrap_or(0)
}

#[tokio::test]
async fn tables_are_charged_as_memory_and_counted_at_load() {
    // Arrange: 60 instances of a module with a 20,000-element table (19.2 MB of table slots)
    // under memory_mib = 1; and one module defining 65 tables.
    let dir = tempfile::tempdir().unwrap();
    let plugins = host(CompileLimits::default(), &dir.path().join("cache"));
    let mut hoard = String::from("(component (core module $t (table 20000 funcref))");
    for _ in 0..60 {
        hoard.push_str(" (core instance (instantiate $t))");
    }
    hoard.push(')');
    let many = format!(
        "(component (core module $m {}) (core instance (instantiate $m)))",
        "(table 1 funcref) ".repeat(65)
    );
    let toml =
        |name: &str| manifest(name, DEFAULT_ROLES, &[], 1, 1000, 1000) + "core_instances = 64\n";

    // Act
    let hoarded = load(
        &plugins,
        dir.path(),
        "hoard",
        &wat::parse_str(&hoard).unwrap(),
        &toml("hoard"),
    )
    .await;
    let tables = load(
        &plugins,
        dir.path(),
        "many",
        &wat::parse_str(&many).unwrap(),
        &toml("many"),
    )
    .await;

    // Assert: refused from the bytes, nothing compiled.
    let e = hoarded.unwrap_err();
    assert!(
        e.contains("1200000 table elements") && e.contains("tables are charged as memory"),
        "{e}"
    );
    let e = tables.unwrap_err();
    assert!(e.contains("defines 65 tables; the host allows 64"), "{e}");
    assert_eq!(compiled_entries(&dir.path().join("cache")), 0);
}

#[tokio::test]
async fn a_component_over_the_size_cap_is_refused_unread() {
    // Arrange: a sparse file one byte over 64 MiB (nothing of it is written to disk).
    let dir = tempfile::tempdir().unwrap();
    let plugins = host(CompileLimits::default(), &dir.path().join("cache"));
    std::fs::write(
        dir.path().join("big.toml"),
        manifest("big", DEFAULT_ROLES, &[], 16, 1000, 1000),
    )
    .unwrap();
    let file = std::fs::File::create(dir.path().join("big.wasm")).unwrap();
    file.set_len(64 * 1024 * 1024 + 1).unwrap();

    // Act
    let e = plugins
        .load(&PluginFiles::in_dir(dir.path(), "big"))
        .await
        .unwrap_err()
        .to_string();

    // Assert
    assert!(
        e.contains("big.wasm: the file is 67108865 bytes or more; a plugin's .wasm file may have at most 67108864"),
        "{e}"
    );
}

#[tokio::test]
async fn a_component_exporting_no_tool_costs_no_compilation() {
    // Arrange: a module with a function, and no export at all.
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let plugins = host(CompileLimits::default(), &cache);
    let wasm =
        wat::parse_str("(component (core module $m (func)) (core instance (instantiate $m)))")
            .unwrap();

    // Act
    let e = load(
        &plugins,
        dir.path(),
        "mute",
        &wasm,
        &manifest("mute", DEFAULT_ROLES, &[], 16, 1000, 1000),
    )
    .await
    .unwrap_err();

    // Assert: refused from the bytes (a compiled component would be in the cache).
    assert!(
        e.contains("does not export `loan:reporting/tool` (exports: none)"),
        "{e}"
    );
    assert_eq!(compiled_entries(&cache), 0);
}

#[tokio::test]
async fn compilation_is_bounded_in_memory_and_the_host_compiles_the_next_plugin() {
    // Arrange: a worker of 640 MiB: the Python runtime's compilation needs about 1.2 GiB (it
    // fails at 900 MiB), the metadata tool's well under 400 MiB. (At 300 MiB the small tool's
    // compilation too was sometimes stopped, by its threads' stacks and arenas.)
    let dir = tempfile::tempdir().unwrap();
    let plugins = host(
        CompileLimits {
            timeout: Duration::from_secs(3600),
            memory_mib: 640,
        },
        &dir.path().join("cache"),
    );
    let (python, python_toml) = example_plugin("python", "report_loans");

    // Act
    let refused = load(&plugins, dir.path(), "report_loans", &python, &python_toml).await;
    let next = load(
        &plugins,
        dir.path(),
        "get_loan_reporting_metadata",
        &tool_wasm("get_loan_reporting_metadata"),
        &tool_manifest("get_loan_reporting_metadata"),
    )
    .await;

    // Assert
    let e = refused.unwrap_err();
    assert!(
        e.contains("report_loans.wasm: not a valid component: the compiler stopped")
            && e.contains("within its 640 MiB (LOANHOST_COMPILE_MEMORY_MIB)"),
        "{e}"
    );
    assert_eq!(next, Ok(()));
}

#[tokio::test]
async fn compilation_is_bounded_in_time() {
    // Arrange: a deadline of 1 s for the Python runtime (about 20 s of compiling).
    let dir = tempfile::tempdir().unwrap();
    let plugins = host(
        CompileLimits {
            timeout: Duration::from_secs(1),
            memory_mib: 4096,
        },
        &dir.path().join("cache"),
    );
    let (python, python_toml) = example_plugin("python", "report_loans");

    // Act
    let e = load(&plugins, dir.path(), "report_loans", &python, &python_toml)
        .await
        .unwrap_err();

    // Assert
    assert!(
        e.contains("compilation did not finish within 1 s (LOANHOST_COMPILE_TIMEOUT_SECS)"),
        "{e}"
    );
}

#[tokio::test]
async fn a_plugin_checked_with_the_servers_cache_is_served_without_compiling_it_again() {
    // Arrange: `plugin check` run with the server's LOANHOST_CACHE_DIR.
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let plugin = dir.path().join("plugin");
    std::fs::create_dir_all(&plugin).unwrap();
    let (wasm, toml) = (
        plugin.join("get_loan_reporting_metadata.wasm"),
        plugin.join("get_loan_reporting_metadata.toml"),
    );
    std::fs::write(&wasm, tool_wasm("get_loan_reporting_metadata")).unwrap();
    std::fs::write(&toml, tool_manifest("get_loan_reporting_metadata")).unwrap();
    let checked = std::process::Command::new(loanhost_binary().expect("the loanhost binary"))
        .args(["plugin", "check"])
        .args([&wasm, &toml])
        .env("LOANHOST_CACHE_DIR", &cache)
        .env("XDG_CACHE_HOME", dir.path().join("user-cache"))
        .output()
        .unwrap();
    assert!(checked.status.success(), "{checked:?}");

    // Act: a host on that cache serving the checked plugin.
    let (mut options, port) = AppOptions::with_tool("get_loan_reporting_metadata").with_metrics();
    options
        .env
        .push(("LOANHOST_CACHE_DIR", cache.display().to_string()));
    let app = spawn_app_with(options).await;
    let metrics = crate::metrics::scrape(&app, port).await;

    // Assert: read from the cache `plugin check` filled, not compiled; the user's cache unused.
    let count = |from: &str| {
        metrics
            .get(&format!(
                "loanhost_plugin_compilations_total{{kind=\"{from}\"}}"
            ))
            .copied()
    };
    assert_eq!(count("cache"), Some(1.0), "{metrics:?}");
    assert_eq!(count("compiled"), None, "{metrics:?}");
    assert!(!dir.path().join("user-cache").exists());
}

#[tokio::test]
async fn the_compile_cache_keeps_to_its_bound_by_removing_what_was_used_least_recently() {
    // Arrange: a host whose precompiled components may take 1 MiB, compiling in process; a
    // plugin's first build compiled and kept.
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let mut options = cached(&cache);
    options.cache_max_mib = 1;
    options.compiler = Compiler::InProcess;
    let plugins = Plugins::with_options(options).unwrap();
    let names = |cache: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(cache)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".cwasm"))
            .collect();
        v.sort();
        v
    };
    let first = "get_loan_reporting_metadata";
    load(
        &plugins,
        dir.path(),
        first,
        &tool_wasm(first),
        &tool_manifest(first),
    )
    .await
    .unwrap();
    let kept_first = names(&cache);

    // Act: a second tool compiled (each compiled tool takes about 1.1 MB).
    let second = "report_loans";
    std::fs::write(
        dir.path().join("report_loans.html"),
        tool_view(second).unwrap(),
    )
    .unwrap();
    load(
        &plugins,
        dir.path(),
        second,
        &tool_wasm(second),
        &tool_manifest(second),
    )
    .await
    .unwrap();

    // Assert: the one just kept stays even over the bound; the other goes.
    assert_eq!(kept_first.len(), 1, "{kept_first:?}");
    let kept = names(&cache);
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_ne!(kept, kept_first);
}

/// The mappings of this process whose file was in `dir` and has no name there any more.
fn unnamed_mappings_in(dir: &Path) -> usize {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let prefix = format!("{}/", dir.display());
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5).map(|p| (p, l)))
        .filter(|(path, line)| path.starts_with(&prefix) && line.ends_with("(deleted)"))
        .count()
}

#[tokio::test]
async fn compiled_code_is_mapped_from_a_file_with_no_name_not_held_in_memory() {
    // Arrange: a host compiling in workers with a compile cache; the tool compiled once and
    // kept there.
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let name = "get_loan_reporting_metadata";
    std::fs::write(dir.path().join(format!("{name}.wasm")), tool_wasm(name)).unwrap();
    std::fs::write(dir.path().join(format!("{name}.toml")), tool_manifest(name)).unwrap();
    let serving = || async {
        let plugins = host(CompileLimits::default(), &cache);
        let plugin = plugins
            .load(&PluginFiles::in_dir(dir.path(), name))
            .await
            .unwrap();
        plugins.registry().insert(std::sync::Arc::new(plugin));
        plugins
    };
    let plugins = serving().await;
    let compiled = unnamed_mappings_in(&cache);

    // Act: a second host reads it back from the cache, and both serve it.
    let again = serving().await;
    let me = loanhost::auth::Identity::new(
        "00000000-0000-0000-0000-0000000000a1",
        [loanhost::auth::RoleCode::Admin],
    );
    for host in [&plugins, &again] {
        let reply = host.call(name, &me, &serde_json::json!({})).await.unwrap();
        assert!(reply["statuses"].is_array(), "{reply}");
    }

    // Assert: each host's code is a mapping of a file in the cache's folder that has no name
    // there (created without one: nobody writing the folder can change it); the folder holds
    // only the authenticated entries.
    assert!(compiled > 0, "the compiled component is mapped");
    assert!(
        unnamed_mappings_in(&cache) > compiled,
        "the one read back is mapped too"
    );
    let names: Vec<String> = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| n.ends_with(".cwasm") || n == "functions"),
        "{names:?}"
    );
}
