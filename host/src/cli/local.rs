//! The plugin loop without a server: `loanhost plugin run` loads a component and its manifest
//! exactly as the server does, imports a folder of JSON Lines fixtures into a scratch database,
//! resolves the caller from it by email, and makes one call with the server's scope and
//! limits, and can write the plugin's view with the result into a page to open locally.

use std::path::Path;

use serde_json::Value;

use loanhost::clock::Clock;
use loanhost::data::Db;
use loanhost::plugins::{CallError, HostOptions, PluginFiles, Plugins, SignaturePolicy};

/// What one local call answered: the structured result, or the error text a client would see
/// (`invalid_params: …`, `forbidden: …` …).
pub type Outcome = Result<Value, String>;

/// One local call: its outcome, and the plugin's view when it ships one (`<tool>.html`
/// beside the manifest), to preview the outcome in ([`loanhost::plugins::view::preview`]).
#[derive(Debug)]
pub struct LocalRun {
    /// What the call answered.
    pub outcome: Outcome,
    /// The plugin's view, as the server would serve it.
    pub view: Option<loanhost::plugins::View>,
}

/// Runs one call of the plugin `wasm` + `manifest` for the agent `email` of the fixture folder
/// `data` (the import files: `agents.jsonl`, `loans.jsonl` …), with `arguments`, on `today`
/// (default: the real date). Errors are about the setup (a refused plugin, a bad fixture line,
/// an unknown email); the call's own failure is the `Err` of the [`Outcome`].
pub async fn run_once(
    wasm: &Path,
    manifest: &Path,
    email: &str,
    data: &Path,
    arguments: &Value,
    today: Option<time::Date>,
) -> anyhow::Result<LocalRun> {
    // A scratch database file, gone with the call (report statements read a file of their
    // own connections, so not an in-memory database).
    let scratch = tempfile::tempdir()?;
    let db = Db::open(&format!(
        "sqlite://{}",
        scratch.path().join("scratch.db").display()
    ))
    .await?;
    loanhost::data::import::import_dir(&db, data, |_, _| {})
        .await
        .map_err(|e| anyhow::anyhow!("{}: {e}", data.display()))?;
    let agent = db.agent_by_email(email).await?.ok_or_else(|| {
        anyhow::anyhow!(
            "no agent with the email {email} in {}/agents.jsonl",
            data.display()
        )
    })?;
    let caller = agent.identity();
    let clock = today.map(Clock::fixed).unwrap_or_else(Clock::system);
    let mut options = HostOptions::new(SignaturePolicy::default(), clock).with_user_cache();
    options.db = Some(db);
    let plugins = Plugins::with_options(options)?;
    let plugin = plugins
        .load(&PluginFiles::explicit(wasm, manifest))
        .await
        .map_err(|e| anyhow::anyhow!("refused: {e}"))?;
    let name = plugin.tool.name.clone();
    let view = plugin.view.clone();
    plugins.registry().insert(std::sync::Arc::new(plugin));
    let outcome = match plugins.call(&name, &caller, arguments).await {
        Ok(v) => Ok(v),
        Err(CallError::Tool(e)) => Err(e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    Ok(LocalRun { outcome, view })
}
