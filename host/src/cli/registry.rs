//! `loanhost plugin check|push|pull|refresh`: the plugin commands that need the configuration
//! (the signature policy, the registry's credentials and TLS roots, the database).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use loanhost::clock::Clock;
use loanhost::config::Config;
use loanhost::plugins::catalog::oci;
use loanhost::plugins::sandbox::memories::Memories;
use loanhost::plugins::{HostOptions, PluginFiles, Plugins, SignaturePolicy};

/// The host `plugin check` loads with: the server's own compile cache when `LOANHOST_CACHE_DIR`
/// names it (a plugin checked there is then served without compiling it again), else the user's
/// cache folder.
fn check_options(config: &Config, policy: SignaturePolicy) -> anyhow::Result<HostOptions> {
    let mut options = HostOptions::new(policy, Clock::system());
    // The server's compile bounds: a plugin that would not compile there is refused here.
    options.compiler =
        loanhost::plugins::Compiler::for_this_process(loanhost::plugins::CompileLimits {
            timeout: config.limits.compile_timeout,
            memory_mib: config.limits.compile_memory_mib,
        });
    if std::env::var_os("LOANHOST_CACHE_DIR").is_none() {
        return Ok(options.with_user_cache());
    }
    let key = loanhost::plugins::load_or_create_cache_key(&config.cache_key_file)
        .map_err(|e| anyhow::anyhow!("{}: {e}", config.cache_key_file.display()))?;
    options.cache_dir = Some(config.cache_dir.clone());
    options.cache_key = Some(key);
    Ok(options)
}

/// `plugin check <wasm> <toml>` or `plugin check oci://…`: loads the plugin exactly as the
/// server would (an artifact is pulled into a scratch folder first) and prints its description,
/// or why it is refused.
pub async fn check(
    config: &Config,
    wasm: &str,
    manifest: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let scratch;
    let (wasm, manifest): (PathBuf, PathBuf) = if wasm.starts_with("oci://") {
        anyhow::ensure!(
            manifest.is_none(),
            "an oci:// reference brings its own manifest: give the reference alone"
        );
        scratch = tempfile::tempdir()?;
        let pulled = oci::pull(wasm, scratch.path(), &config.registry).await?;
        eprintln!("pulled {} ({})", wasm, pulled.digest);
        let dir = scratch.path();
        (
            dir.join(format!("{}.wasm", pulled.name)),
            dir.join(format!("{}.toml", pulled.name)),
        )
    } else {
        let manifest = manifest.ok_or_else(|| {
            anyhow::anyhow!(
                "give the component and its manifest: plugin check <tool>.wasm <tool>.toml"
            )
        })?;
        (PathBuf::from(wasm), manifest.to_path_buf())
    };
    let policy = SignaturePolicy::new(config.require_signed_plugins, &config.trusted_keys)
        .map_err(|e| anyhow::anyhow!("LOANHOST_TRUSTED_KEYS: {e}"))?;
    let plugins = Plugins::with_options(check_options(config, policy)?)?;
    match plugins.load(&PluginFiles::explicit(&wasm, &manifest)).await {
        Ok(p) => {
            let m = &p.manifest;
            let out = serde_json::json!({
                "name": p.tool.name,
                "title": p.tool.title,
                "description": p.tool.description,
                "inputSchema": p.tool.input_schema,
                "outputSchema": p.tool.output_schema,
                "witVersion": p.wit_version.as_str(),
                "sha256": p.digest,
                "signed": p.signed,
                "roles": m.roles.iter().map(|r| r.as_str()).collect::<Vec<_>>(),
                "datasets": m.datasets().map(|d| d.as_str()).collect::<Vec<_>>(),
                "limits": {"memoryMib": m.limits.memory_mib, "timeoutMs": m.limits.timeout_ms, "maxOutputBytes": m.limits.max_output_bytes, "coreInstances": m.limits.core_instances},
                "component": {
                    "coreInstances": p.shape.core_instances,
                    "memories": p.shape.memories,
                    "tables": p.shape.tables,
                    "initialMemoryMib": p.shape.initial_memory_mib(),
                    "imageMib": p.shape.image_memory_mib(),
                    // How its loads and stores are kept in its memory (decision 0044).
                    "memoryAccess": Memories::of_image(p.shape.image_memory).describe(),
                    "imports": p.shape.imports,
                },
                "view": p.view.as_ref().map(|v| serde_json::json!({
                    "uri": v.uri,
                    "bytes": v.html.len(),
                    "sha256": v.digest,
                    "title": v.decl.title,
                })),
            });
            println!("{}", serde_json::to_string_pretty(&out)?);
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("refused: {e}");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// `plugin push <wasm> <toml> oci://…`: prints the pushed artifact's digest and files.
pub async fn push(
    config: &Config,
    wasm: &Path,
    manifest: &Path,
    reference: &str,
    unsigned: bool,
) -> anyhow::Result<ExitCode> {
    let pushed = oci::push(wasm, manifest, reference, unsigned, &config.registry).await?;
    eprintln!("pushed {} ({})", pushed.reference, pushed.files.join(", "));
    println!("{}", pushed.digest);
    Ok(ExitCode::SUCCESS)
}

/// `plugin pull oci://… --out DIR`: writes the artifact's files and prints their paths.
pub async fn pull(config: &Config, reference: &str, out: &Path) -> anyhow::Result<ExitCode> {
    let pulled = oci::pull(reference, out, &config.registry).await?;
    eprintln!("pulled {reference} ({})", pulled.digest);
    for file in &pulled.files {
        println!("{}", file.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// `plugin refresh [oci://…]`: tells every host on the database to resolve `references` (all
/// of its references when none is named) now.
pub async fn refresh(config: &Config, references: &[String]) -> anyhow::Result<ExitCode> {
    use loanhost::data::notices::{notify, EVERY_REFERENCE, PLUGIN_REFS};
    for reference in references {
        oci::parse_reference(reference)?;
    }
    let db = loanhost::data::Db::open_reports(&config.database_url).await?;
    let payloads = match references {
        [] => vec![EVERY_REFERENCE.to_string()],
        some => some.to_vec(),
    };
    for payload in &payloads {
        if !notify(&db, PLUGIN_REFS, payload).await? {
            anyhow::bail!(
                "LOANHOST_DATABASE_URL is SQLite, which serves one host: nothing to tell; it \
                 resolves its references every LOANHOST_REGISTRY_INTERVAL_SECS"
            );
        }
    }
    match references {
        [] => println!("told every host on the database to resolve all its references"),
        some => println!(
            "told every host following them to resolve {}",
            some.join(", ")
        ),
    }
    Ok(ExitCode::SUCCESS)
}
