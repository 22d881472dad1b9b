//! The `loanhost` command: serve, and plugin tooling. Thin: everything lives in the library.

mod cli;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use loanhost::app::Application;
use loanhost::config::Config;

/// Runs before the allocator starts (mimalloc's own constructor has priority 101): arenas are
/// committed lazily, as `MIMALLOC_ARENA_EAGER_COMMIT=0` would set. On Linux, mimalloc commits
/// its arenas eagerly, and memory freed in an eagerly committed arena stays resident: a host
/// with the six shipped tools idled at 66 MiB, 45 MiB with this (docs/benchmarks.md). An
/// operator's `MIMALLOC_ARENA_EAGER_COMMIT` still decides when it is set.
#[used]
#[link_section = ".init_array.00100"]
static ALLOCATOR_OPTIONS: extern "C" fn() = {
    extern "C" fn lazy_arena_commit() {
        extern "C" {
            /// mimalloc's `mi_option_set(option, value)`.
            fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
        }
        /// `mi_option_arena_eager_commit` in mimalloc 2's `mi_option_e`.
        const ARENA_EAGER_COMMIT: std::ffi::c_int = 4;
        // SAFETY: `getenv` with a NUL-terminated name (nothing here may allocate: the
        // allocator is not started); `mi_option_set` stores a value in mimalloc's static
        // option table, and needs no initialised allocator either.
        unsafe {
            if libc::getenv(c"MIMALLOC_ARENA_EAGER_COMMIT".as_ptr()).is_null() {
                mi_option_set(ARENA_EAGER_COMMIT, 0);
            }
        }
    }
    lazy_arena_commit
};

/// MCP tool server whose loan-reporting tools are sandboxed WebAssembly plugins.
#[derive(Parser)]
#[command(name = "loanhost", version, about)]
struct Cli {
    /// A TOML configuration file (keys as the LOANHOST_* variables, lower case, no prefix).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve /mcp, the OAuth facade and /health.
    Serve,
    /// Import JSON Lines files (agents, loans, LOS history, warehouse milestones, deals) from
    /// a folder, in one transaction: a bad line stops it with `file:line: reason` and nothing
    /// is kept. Re-importing the same files is idempotent.
    Import {
        /// The folder holding the `.jsonl` files.
        dir: PathBuf,
    },
    /// Generate a realistic synthetic data set (deterministic for a seed and LOANHOST_TODAY).
    Seed {
        /// Number of loans.
        #[arg(long, default_value_t = 5000)]
        loans: u64,
        /// RNG seed.
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// Write the JSON Lines files into this folder.
        #[arg(long, conflicts_with = "import", required_unless_present = "import")]
        out: Option<PathBuf>,
        /// Import the generated data into LOANHOST_DATABASE_URL.
        #[arg(long)]
        import: bool,
    },
    /// Mint an access token from the embedded dev IdP's key, for curl (dev only).
    Token {
        /// The platform agent's email.
        #[arg(long)]
        email: String,
    },
    /// Print the REST API description (OpenAPI 3.1, version v1.2) for this configuration's
    /// LOANHOST_BASE_URL and LOANHOST_API_PREFIX; the server serves the same document at
    /// {api_prefix}/openapi.json.
    Openapi,
    /// The audit log.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// Plugin tooling.
    Plugin {
        #[command(subcommand)]
        command: PluginCommand,
    },
    /// Compiles one component from standard input to standard output, under the memory
    /// limit the host sets (the host's own compile worker; not for direct use).
    #[command(name = "compile-worker", hide = true)]
    CompileWorker,
}

#[derive(Subcommand)]
enum AuditCommand {
    /// Check audit logs' chain: the first line removed, changed, inserted or moved is named
    /// (`FILE:LINE`), and lines removed from the end when the live log's head says so. Give a
    /// rotated log's files oldest first (`audit.jsonl.2 audit.jsonl.1 audit.jsonl`).
    Verify {
        /// The audit key (default: the configuration's LOANHOST_AUDIT_KEY_FILE).
        #[arg(long)]
        key: Option<PathBuf>,
        /// Also check the chain against its anchors in this PostgreSQL database (alone: the
        /// configuration's LOANHOST_DATABASE_URL): lines cut from the end, a log rewound with
        /// its head, a chain written again from an anchored line.
        #[arg(long, num_args = 0..=1, default_missing_value = "", value_name = "DATABASE_URL")]
        anchors: Option<String>,
        /// The log files, oldest first.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

#[derive(Subcommand)]
enum PluginCommand {
    /// Print the fields a plugin's `data` queries may read: dataset, field, type, who may
    /// read it (aggregate; name: callers with Admin, Processor or ConciergeKey; identifying:
    /// read only with a listing grant; withheld: never leaves the host), and what it holds.
    Fields {
        /// As JSON (one array of objects) instead of a table.
        #[arg(long, conflicts_with = "markdown")]
        json: bool,
        /// As the Markdown table of docs/plugins.md.
        #[arg(long)]
        markdown: bool,
    },
    /// Load a plugin exactly as the server would and print its tool description, or the
    /// precise reason it is refused (exit status 1).
    Check {
        /// The component (`<tool>.wasm`; a `<tool>.wasm.minisig` beside it is checked), or an
        /// artifact in a registry (`oci://registry/repository:tag` or `@sha256:…`).
        wasm: String,
        /// Its manifest (`<tool>.toml`; the view `<tool>.html`, when it declares one, sits
        /// beside it); none for an `oci://` reference.
        manifest: Option<PathBuf>,
    },
    /// Push a built plugin (component, manifest, and their signatures and view when beside
    /// them) to an OCI registry as one artifact, and print its digest. A release whose files
    /// are signed only in part is refused; one not signed at all needs `--unsigned`.
    Push {
        /// The component, `<tool>.wasm`.
        wasm: PathBuf,
        /// Its manifest, `<tool>.toml`.
        manifest: PathBuf,
        /// Where to: `oci://registry/repository:tag`.
        reference: String,
        /// Push a release that carries no signature (served only by hosts that allow
        /// unsigned plugins).
        #[arg(long)]
        unsigned: bool,
    },
    /// Pull a plugin artifact from an OCI registry into a folder (its files under their own
    /// names, each checked against its digest), for inspection or `plugin check`.
    Pull {
        /// `oci://registry/repository:tag` or `…@sha256:…`.
        reference: String,
        /// The folder to write the files in.
        #[arg(long, default_value = ".")]
        out: PathBuf,
    },
    /// Tell every host on LOANHOST_DATABASE_URL (PostgreSQL) to resolve its registry
    /// references now rather than at its next interval: after a re-tag or a rollback.
    Refresh {
        /// The references to resolve (`oci://…`, as the hosts' LOANHOST_PLUGIN_REFS spell
        /// them); none: all of them.
        references: Vec<String>,
    },
    /// Scaffold a plugin crate and its manifest that build and pass `plugin check` at once.
    New {
        /// The tool name (`snake_case`; also the crate name and the manifest's stem).
        name: String,
        /// Where to create `<name>/` (default: `plugins/tools` when it exists here, else `.`).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// The SDK to build against (default: this checkout's `plugins/sdk`,
        /// `plugins/sdk-python` or `plugins/sdk-ts`, by `--lang`).
        #[arg(long)]
        sdk: Option<PathBuf>,
        /// The plugin's language: `rust`, `python` or `typescript`.
        #[arg(long, default_value = "rust")]
        lang: String,
        /// Also write an MCP Apps view of its results (`view/main.ts`, a chart drawn with the
        /// views library) and declare it in the manifest.
        #[arg(long)]
        view: bool,
    },
    /// Run one call of a plugin against a folder of JSON Lines fixtures (the import files), as
    /// the agent with the given email, with the server's scope and limits; print the result.
    Run {
        /// The component.
        wasm: PathBuf,
        /// Its manifest.
        manifest: PathBuf,
        /// The caller: an email of the fixtures' `agents.jsonl`.
        #[arg(long = "as")]
        email: String,
        /// The fixture folder.
        #[arg(long)]
        data: PathBuf,
        /// The tool's arguments, a JSON object.
        #[arg(long, default_value = "{}")]
        args: String,
        /// "Today" for the call (default: the real date).
        #[arg(long)]
        today: Option<String>,
        /// Also write the plugin's view (`<tool>.html` beside the manifest) with this result
        /// into a page to open in a browser.
        #[arg(long, value_name = "OUT.html")]
        view: Option<PathBuf>,
        /// The theme the view preview asks for: light or dark.
        #[arg(long, default_value = "light", value_parser = ["light", "dark"])]
        theme: String,
    },
    /// Rebuild a plugin crate whenever its sources change and deploy it into a plugin
    /// directory (atomically: the server's reloader never sees a half-written file). Stops
    /// after `--rounds` rebuilds, or with Ctrl-C.
    Watch {
        /// The plugin crate (e.g. `plugins/tools/my_report`).
        krate: PathBuf,
        /// The plugin directory to deploy into (a running server's `LOANHOST_PLUGIN_DIR`).
        #[arg(long)]
        deploy: PathBuf,
        /// Sign every build with this secret key (`loanhost.key`) before deploying it;
        /// without one, signatures of an earlier deploy are removed.
        #[arg(long)]
        sign_key: Option<PathBuf>,
        /// Stop after this many builds (default: never).
        #[arg(long)]
        rounds: Option<u32>,
    },
    /// Write a signing key pair (`loanhost.pub`, `loanhost.key`) in minisign's format.
    Keygen {
        /// The folder to write them in.
        #[arg(long, default_value = ".")]
        out: PathBuf,
    },
    /// Sign files (a plugin's `.wasm` and `.toml`) into `<file>.minisig`; the view beside
    /// them (`<tool>.html`) is signed too, so that a release is signed whole.
    Sign {
        /// The secret key (`loanhost.key`).
        #[arg(long)]
        key: PathBuf,
        /// The files to sign.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::CompileWorker = cli.command {
        return loanhost::plugins::sandbox::compiler::worker_main();
    }
    let traces = cli::logs::init_tracing();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    };
    if let Some(provider) = traces {
        let _ = provider.shutdown();
    }
    code
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    if let Command::Plugin { command } = &cli.command {
        if let Some(code) = cli::plugin::plugin_tool(command).await? {
            return Ok(code);
        }
    }
    let config = Config::load(cli.config.as_deref())?;
    match cli.command {
        Command::Serve => {
            let app = Application::build(config.clone()).await?;
            tracing::info!(port = app.port(), base_url = %config.base_url, "loanhost listening");
            app.run_until_stopped().await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Import { dir } => cli::data::import(&config, &dir).await,
        Command::Seed {
            loans,
            seed,
            out,
            import,
        } => cli::data::seed(&config, loans, seed, out, import).await,
        Command::Openapi => {
            let doc = loanhost::http::openapi::document(&config.base_url, &config.api_prefix);
            println!("{}", serde_json::to_string_pretty(&doc)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Token { email } => cli::token::token(&config, &email).await,
        Command::Audit {
            command:
                AuditCommand::Verify {
                    key,
                    anchors,
                    files,
                },
        } => {
            let anchors = anchors.map(|url| {
                if url.is_empty() {
                    config.database_url.clone()
                } else {
                    url
                }
            });
            cli::audit::verify_logs(
                key.as_deref().unwrap_or(&config.audit_key_file),
                anchors.as_deref(),
                &files,
            )
            .await
        }
        Command::Plugin {
            command: PluginCommand::Check { wasm, manifest },
        } => cli::registry::check(&config, &wasm, manifest.as_deref()).await,
        Command::Plugin {
            command:
                PluginCommand::Push {
                    wasm,
                    manifest,
                    reference,
                    unsigned,
                },
        } => cli::registry::push(&config, &wasm, &manifest, &reference, unsigned).await,
        Command::Plugin {
            command: PluginCommand::Pull { reference, out },
        } => cli::registry::pull(&config, &reference, &out).await,
        Command::Plugin {
            command: PluginCommand::Refresh { references },
        } => cli::registry::refresh(&config, &references).await,
        Command::Plugin { .. } => unreachable!("answered by plugin_tool before the configuration"),
        Command::CompileWorker => unreachable!("answered in main before the runtime starts"),
    }
}
