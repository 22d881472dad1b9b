//! `loanhost plugin new|fields|watch|keygen|sign|run`: the commands a plugin team runs, which
//! need no configuration (`plugin check` needs the signature policy and runs in `main`).

use std::path::PathBuf;
use std::process::ExitCode;

use crate::PluginCommand;

/// The plugin tooling that needs no server configuration.
pub async fn plugin_tool(command: &PluginCommand) -> anyhow::Result<Option<ExitCode>> {
    use super::scaffold::{Lang, Scaffold};
    match command {
        PluginCommand::Check { .. }
        | PluginCommand::Push { .. }
        | PluginCommand::Pull { .. }
        | PluginCommand::Refresh { .. } => Ok(None),
        PluginCommand::Fields { json, markdown } => {
            print_fields(*json, *markdown)?;
            Ok(Some(ExitCode::SUCCESS))
        }
        PluginCommand::New {
            name,
            dir,
            sdk,
            lang,
            view,
        } => {
            let lang = Lang::parse(lang).map_err(|e| anyhow::anyhow!("--lang: {e}"))?;
            let dir = dir.clone().unwrap_or_else(|| {
                let tools = PathBuf::from("plugins/tools");
                if tools.is_dir() {
                    tools
                } else {
                    PathBuf::from(".")
                }
            });
            let sdk = sdk.clone().unwrap_or_else(|| {
                lang.sdk_in(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."))
            });
            let (krate, in_workspace) = Scaffold {
                name,
                dir: &dir,
                sdk: &sdk,
                lang,
                view: *view,
            }
            .write()
            .map_err(|e| anyhow::anyhow!(e))?;
            if in_workspace {
                record_member(&dir);
            }
            print_created(&krate, lang, name, *view);
            Ok(Some(ExitCode::SUCCESS))
        }
        PluginCommand::Run {
            wasm,
            manifest,
            email,
            data,
            args,
            today,
            view,
            theme,
        } => {
            let arguments: serde_json::Value =
                serde_json::from_str(args).map_err(|e| anyhow::anyhow!("--args: not JSON: {e}"))?;
            let today = today
                .as_deref()
                .map(|d| {
                    loanhost::config::parse_date(d).ok_or_else(|| {
                        anyhow::anyhow!("--today: `{d}` is not a date like 2026-01-31")
                    })
                })
                .transpose()?;
            let run =
                super::local::run_once(wasm, manifest, email, data, &arguments, today).await?;
            if let Some(out) = view {
                write_preview(out, manifest, &run, &arguments, theme)?;
            }
            match run.outcome {
                Ok(v) => {
                    println!("{}", serde_json::to_string_pretty(&v)?);
                    Ok(Some(ExitCode::SUCCESS))
                }
                Err(text) => {
                    eprintln!("{text}");
                    Ok(Some(ExitCode::FAILURE))
                }
            }
        }
        PluginCommand::Watch {
            krate,
            deploy,
            sign_key,
            rounds,
        } => {
            let script =
                PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/build-plugin.sh");
            super::watch::watch(krate, deploy, &script, sign_key.as_deref(), *rounds)
                .await
                .map_err(|e| anyhow::anyhow!(e))?;
            Ok(Some(ExitCode::SUCCESS))
        }
        PluginCommand::Keygen { out } => {
            let public = super::signing_tool::keygen(out).map_err(|e| anyhow::anyhow!(e))?;
            println!("{public}");
            eprintln!("wrote {0}/loanhost.pub and {0}/loanhost.key (keep the key secret); trust it with LOANHOST_TRUSTED_KEYS={public}", out.display());
            Ok(Some(ExitCode::SUCCESS))
        }
        PluginCommand::Sign { key, files } => {
            for f in super::signing_tool::release_files(files) {
                let sig = super::signing_tool::sign(&f, key).map_err(|e| anyhow::anyhow!(e))?;
                println!("{}", sig.display());
            }
            Ok(Some(ExitCode::SUCCESS))
        }
    }
}

/// The field reference: as JSON, as Markdown, or as a table.
fn print_fields(json: bool, markdown: bool) -> anyhow::Result<()> {
    use loanhost::data::field_reference;
    if json {
        let fields = field_reference::reference();
        println!("{}", serde_json::to_string_pretty(&fields)?);
    } else if markdown {
        print!("{}", field_reference::markdown());
    } else {
        for f in field_reference::reference() {
            println!(
                "{:<20} {:<34} {:<10} {:<12}{}",
                f.dataset, f.field, f.ty, f.exposure, f.meaning
            );
        }
    }
    Ok(())
}

/// Records a plugin scaffolded into the guest workspace in its `Cargo.lock` (it builds with
/// `--locked`); a note when that cannot be done now.
fn record_member(dir: &std::path::Path) {
    // The guest workspace builds with --locked: record the new member now.
    let workspace = dir.parent().unwrap_or(dir);
    let status = std::process::Command::new("cargo")
        .args(["update", "--workspace", "--offline", "--quiet"])
        .current_dir(workspace)
        .status();
    if !status.is_ok_and(|s| s.success()) {
        eprintln!(
            "note: could not update {}/Cargo.lock; `make plugins` does it",
            workspace.display()
        );
    }
}

/// What `plugin new` wrote, file by file.
fn print_created(krate: &std::path::Path, lang: super::scaffold::Lang, name: &str, view: bool) {
    use super::scaffold::Lang;
    let (tool, test) = match lang {
        Lang::Rust => ("src/lib.rs", "src/lib.rs (its tests module)"),
        Lang::Python => ("plugin.py", "tests/test_plugin.py"),
        Lang::TypeScript => ("src/plugin.ts", "test/plugin.test.ts"),
    };
    println!("created {}", krate.display());
    println!("  {}/{tool}   the tool", krate.display());
    println!("  {}/{test}   its unit tests", krate.display());
    println!("  {}/{name}.toml   its manifest", krate.display());
    if view {
        println!(
            "  {}/view/main.ts   its MCP Apps view (built into {name}.html beside the component)",
            krate.display()
        );
    }
}

/// Writes the plugin's view with the result of `run` into the page `out`, to open locally.
fn write_preview(
    out: &std::path::Path,
    manifest: &std::path::Path,
    run: &super::local::LocalRun,
    arguments: &serde_json::Value,
    theme: &str,
) -> anyhow::Result<()> {
    let shipped = run.view.as_ref().ok_or_else(|| {
        anyhow::anyhow!(
            "--view: the plugin ships no view (its manifest declares no [view]; see docs/plugins.md, \"Views\")"
        )
    })?;
    let name = manifest
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("plugin");
    let page =
        loanhost::plugins::catalog::view::preview(shipped, name, arguments, &run.outcome, theme);
    std::fs::write(out, page).map_err(|e| anyhow::anyhow!("--view: {}: {e}", out.display()))?;
    eprintln!("wrote {} (open it in a browser)", out.display());
    Ok(())
}
