//! Application assembly: builds the plugin host, loads the plugin directory, starts the
//! reloader, binds the listener (port 0 in tests) and serves the router.

use std::sync::Arc;

use anyhow::Context as _;
use tokio::net::TcpListener;

use crate::auth::Authenticator;
use crate::clock::Clock;
use crate::config::Config;
use crate::config::{BudgetScope, CompilerSetting};
use crate::data::audit_anchors::AnchorStore;
use crate::data::fleet_budgets::FleetLedger;
use crate::data::Db;
use crate::http::{router, serve, AppState};
use crate::mcp::Dispatcher;
use crate::oauth::devidp::{DevIdp, SigningKey};
use crate::plugins::catalog::follow::Follower;
use crate::plugins::{
    CallerLimits, Compiler, Fleet, HostOptions, Plugins, Reloader, SignaturePolicy,
};

/// Longest the server waits, at start, for its plugins to be compiled before it binds.
pub const STARTUP_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

/// A built, bound, not yet serving application.
pub struct Application {
    listener: TcpListener,
    metrics: Option<TcpListener>,
    state: AppState,
    reloader: tokio::task::JoinHandle<()>,
    follower: Option<tokio::task::JoinHandle<()>>,
    directory: Option<Arc<crate::data::directory::Directory>>,
}

impl Application {
    /// Builds the application from its configuration: database, dev IdP (when enabled),
    /// token validation, plugins.
    pub async fn build(config: Config) -> anyhow::Result<Application> {
        let db = Db::open_identity(&config.database_url).await?;
        if db.lacks_search_index().await? {
            tracing::warn!(
                "the loans have no trigram index (schema v14 needs the pg_trgm extension): \
                 searchText reads every loan; see docs/decisions/0029-search-through-a-trigram-index.md"
            );
        }
        let dev_idp = if config.dev_idp {
            let key = SigningKey::load_or_create(&dev_idp_key_path(&config))?;
            Some(Arc::new(
                DevIdp::new(
                    &config.base_url,
                    &config.mcp_audience,
                    key,
                    db.clone(),
                    config.dev_idp_token_ttl,
                )
                .with_password(config.dev_idp_password.clone())
                .with_redirects(
                    std::iter::once(crate::oauth::callback_url(&config.base_url))
                        .chain(
                            config
                                .registered_redirects
                                .iter()
                                .filter(|r| {
                                    r.client_id
                                        .as_deref()
                                        .is_none_or(|c| c == crate::oauth::devidp::CLIENT_ID)
                                })
                                .map(|r| r.uri.clone()),
                        )
                        .collect(),
                ),
            ))
        } else {
            None
        };
        let directory = Arc::new(crate::data::directory::Directory::open(db.clone()).await?);
        // The dev IdP's keys are taken directly when it is the upstream.
        let dev_keys = dev_idp
            .as_deref()
            .filter(|idp| config.idp.jwks_url == format!("{}/jwks", idp.issuer))
            .map(DevIdp::jwks);
        let authenticator = crate::auth::from_config(&config, directory.clone(), dev_keys);
        let mut app = Self::build_with(config, db, dev_idp, authenticator).await?;
        app.directory = Some(directory);
        Ok(app)
    }

    /// Builds the application with a given authenticator (for embedding).
    pub async fn build_with(
        config: Config,
        db: Db,
        dev_idp: Option<Arc<DevIdp>>,
        authenticator: Arc<dyn Authenticator>,
    ) -> anyhow::Result<Application> {
        let limits = config.limits;
        let metrics = Arc::new(crate::telemetry::Metrics::default());
        let options = host_options(&config, &metrics).await?;
        let metrics_listener = match config.metrics_listen {
            None => None,
            Some(addr) => Some(
                TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("LOANHOST_METRICS_LISTEN: cannot bind {addr}"))?,
            ),
        };
        let plugins = Plugins::with_options(options)?;
        if !config.plugin_dir.is_dir() {
            anyhow::bail!(
                "LOANHOST_PLUGIN_DIR: {} is not a directory (build the plugins with `make plugins`)",
                config.plugin_dir.display()
            );
        }
        let reloader = Reloader::new(plugins.clone(), config.plugin_dir.clone());
        // The first scan loads every plugin before the listener binds, so a server that
        // answers serves its tools; but it waits at most STARTUP_WAIT for compilations (one
        // hostile or huge file cannot hold the start for its whole compile deadline): what is
        // still compiling then is served when it is done, and `/ready` counts what is loaded.
        let scan = {
            let reloader = reloader.clone();
            async move {
                let r = reloader.scan().await;
                (r.loaded, r.failed.len())
            }
        };
        first_round(scan, "plugins loaded", "plugins are still compiling").await;
        let reloader = reloader.spawn();
        let follower = follow(&config, &plugins, &db).await;

        let listener = TcpListener::bind(config.listen)
            .await
            .with_context(|| format!("LOANHOST_LISTEN: cannot bind {}", config.listen))?;
        let callback_key = match &config.authorize_callback {
            None => None,
            Some(c) => Some(Arc::new(
                crate::oauth::CallbackKey::load_or_create(&c.key_file)
                    .map_err(|e| anyhow::anyhow!("LOANHOST_AUTHORIZE_KEY_FILE: {e}"))?,
            )),
        };
        let audit = Arc::new(
            crate::audit::AuditLog::open(&config.audit_log, &config.audit_key_file)
                .map_err(|e| anyhow::anyhow!("LOANHOST_AUDIT_LOG: {e}"))?,
        );
        anchor(&db, &audit, config.audit_anchor_every);
        let config = Arc::new(config);
        let oauth = Arc::new(crate::oauth::OAuth {
            config: config.clone(),
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .context("building the HTTP client")?,
            token_forwards: tokio::sync::Semaphore::new(limits.max_token_forwards as usize),
            callback_key,
            dev_idp,
            metrics: metrics.clone(),
        });
        let state = AppState::new(crate::http::Shared {
            oauth,
            penalty: Default::default(),
            in_flight: Arc::new(tokio::sync::Semaphore::new(
                limits.max_concurrent_requests as usize,
            )),
            per_address: crate::http::gate::KeyedGate::new(limits.max_requests_per_address),
            uploads: crate::http::gate::KeyedGate::new(
                limits.caller_max_concurrent.saturating_mul(2).max(2),
            ),
            dispatcher: Dispatcher::new(
                plugins.clone(),
                metrics.clone(),
                limits.max_batch as usize,
            )
            .with_tools_list(config.tools_list)
            .with_audit(audit),
            config,
            authenticator,
            plugins,
            metrics,
            db,
        });
        Ok(Application {
            listener,
            metrics: metrics_listener,
            state,
            reloader,
            follower,
            directory: None,
        })
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.listener.local_addr().map(|a| a.port()).unwrap_or(0)
    }

    /// The database (for tests and tooling).
    pub fn db(&self) -> Db {
        self.state.db.clone()
    }

    /// The agent directory identity is resolved through (for tests and tooling); `None` when
    /// the application was built with an authenticator of its own.
    pub fn directory(&self) -> Option<Arc<crate::data::directory::Directory>> {
        self.directory.clone()
    }

    /// The plugin host (for tests and tooling).
    pub fn plugins(&self) -> Arc<Plugins> {
        self.state.plugins.clone()
    }

    /// The bound port of the metrics listener, when there is one.
    pub fn metrics_port(&self) -> Option<u16> {
        self.metrics
            .as_ref()
            .and_then(|l| l.local_addr().ok())
            .map(|a| a.port())
    }

    /// Serves until the process is stopped (Ctrl-C or SIGTERM).
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        if let Some(listener) = self.metrics {
            let app = crate::http::metrics::router(self.state.clone());
            tokio::spawn(async move {
                if let Err(e) = axum::serve(listener, app).await {
                    tracing::error!(error = %e, "the metrics listener stopped");
                }
            });
        }
        let limits = self.state.config.limits;
        let app = router(self.state);
        let result = serve(self.listener, app, limits, shutdown_signal()).await;
        self.reloader.abort();
        if let Some(f) = self.follower {
            f.abort();
        }
        result
    }
}

/// Runs a first round of loading (the folder's scan, the references' resolution) before the
/// listener binds, waiting at most [`STARTUP_WAIT`]: what is still compiling then is served
/// when it is done, and `/ready` counts what is loaded.
async fn first_round(
    round: impl std::future::Future<Output = (Vec<String>, usize)> + Send + 'static,
    done: &'static str,
    still: &'static str,
) {
    let mut first = tokio::spawn(round);
    match tokio::time::timeout(STARTUP_WAIT, &mut first).await {
        Ok(Ok((loaded, failed))) => tracing::info!(?loaded, failed, "{done}"),
        Ok(Err(e)) => tracing::error!(error = %e, "the first round of loading failed"),
        Err(_) => tracing::warn!(
            wait_secs = STARTUP_WAIT.as_secs(),
            "{still}; serving the ones loaded, the rest as they finish"
        ),
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            s.recv().await;
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
    tracing::info!("shutting down");
}

/// Where the dev IdP keeps its signing key (inside the cache directory).
pub fn dev_idp_key_path(config: &Config) -> std::path::PathBuf {
    config.cache_dir.join("dev-idp-rsa.pem")
}

/// The plugin host's options from the configuration: the signature policy, the clock, the
/// compile cache and its key, the reports' own pool (identity lookups never wait behind
/// them), the compiler, and the per-call and per-caller limits.
async fn host_options(
    config: &Config,
    metrics: &Arc<crate::telemetry::Metrics>,
) -> anyhow::Result<HostOptions> {
    let policy = SignaturePolicy::new(config.require_signed_plugins, &config.trusted_keys)
        .map_err(|e| anyhow::anyhow!("LOANHOST_TRUSTED_KEYS: {e}"))?;
    let clock = config.today.map(Clock::fixed).unwrap_or_else(Clock::system);
    let cache_key = crate::plugins::load_or_create_cache_key(&config.cache_key_file)
        .map_err(|e| anyhow::anyhow!("LOANHOST_CACHE_KEY_FILE: {e}"))?;
    // Reports get a pool of their own: identity lookups never wait behind them.
    let reports = Db::open_reports(&config.database_url).await?;
    let limits = config.limits;
    let mut options = HostOptions::new(policy, clock);
    options.cache_dir = Some(config.cache_dir.clone());
    options.cache_key = Some(cache_key);
    options.cache_max_mib = limits.cache_max_mib;
    options.db = Some(reports);
    options.memory_mib = limits.plugin_memory_mib;
    options.heavy_queries = limits.heavy_queries as usize;
    options.log_lines_per_second = limits.plugin_log_lines_per_second;
    options.calls_audited = config.audit_log.trim() != "off";
    let compile_limits = crate::plugins::CompileLimits {
        timeout: limits.compile_timeout,
        memory_mib: limits.compile_memory_mib,
    };
    options.compiler = match &config.compiler {
        CompilerSetting::ThisExecutable => Compiler::for_this_process(compile_limits),
        CompilerSetting::Program(program) => Compiler::Isolated {
            program: program.clone(),
            limits: compile_limits,
        },
        CompilerSetting::InProcess => Compiler::InProcess,
    };
    if options.compiler == Compiler::InProcess {
        tracing::warn!("plugins are compiled in this process, without the compile worker's time and memory bounds (LOANHOST_COMPILER)");
    }
    options.callers = CallerLimits {
        max_concurrent: limits.caller_max_concurrent,
        calls_per_minute: limits.caller_calls_per_minute,
        plugin_seconds_per_minute: limits.caller_plugin_seconds_per_minute,
        result_mib_per_minute: limits.caller_result_mib_per_minute,
    };
    options.fleet = fleet(config, metrics).await?;
    options.metrics = metrics.clone();
    Ok(options)
}

/// On PostgreSQL, records the audit chain's last line in `audit_anchors` every `every`, when
/// a line was written since (decision 0047): a task that ends with the audit log.
fn anchor(db: &Db, audit: &crate::audit::AuditLog, every: std::time::Duration) {
    let (Some(store), Some(mut heads)) = (AnchorStore::of(db), audit.heads()) else {
        return;
    };
    tokio::spawn(async move {
        let mut anchored = None;
        loop {
            tokio::time::sleep(every).await;
            if heads.has_changed().is_err() {
                return;
            }
            let Some(anchor) = heads.borrow_and_update().clone() else {
                continue;
            };
            if anchored.as_ref() == Some(&anchor) {
                continue;
            }
            let (chain, head) = (&anchor.chain, &anchor.head);
            match store.record(chain, head.seq, &head.seal).await {
                Ok(()) => anchored = Some(anchor),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot anchor the audit chain in PostgreSQL; trying again")
                }
            }
        }
    });
}

/// The fleet whose ledger the per-minute caller budgets are leased from: on PostgreSQL unless
/// `LOANHOST_CALLER_BUDGETS=host` (decision 0048); SQLite serves one host.
async fn fleet(
    config: &Config,
    metrics: &Arc<crate::telemetry::Metrics>,
) -> anyhow::Result<Option<Arc<Fleet>>> {
    if config.caller_budgets == BudgetScope::Host || config.database_url.starts_with("sqlite:") {
        return Ok(None);
    }
    let db = Db::open_ledger(&config.database_url).await?;
    match FleetLedger::of(&db) {
        Some(ledger) => {
            Ok(Some(Fleet::join(ledger, metrics.clone()).await.context(
                "joining the fleet's budget ledger (LOANHOST_CALLER_BUDGETS)",
            )?))
        }
        None => Ok(None),
    }
}

/// The follower of the configured registry references, when there are any, after its first
/// round: as the folder's, the references' tools are served before the listener binds.
async fn follow(
    config: &Config,
    plugins: &Arc<Plugins>,
    db: &Db,
) -> Option<tokio::task::JoinHandle<()>> {
    if config.follow.references.is_empty() {
        None
    } else {
        let follower = Follower::new(
            plugins.clone(),
            config.follow.clone(),
            config.registry.clone(),
            &config.cache_dir,
            Some(db.clone()),
        );
        // As the folder's: the references' tools are served before the listener binds.
        let round = {
            let follower = follower.clone();
            async move {
                let r = follower.resolve().await;
                let loaded: Vec<String> = r.loaded.into_iter().map(|(_, tool, _)| tool).collect();
                (loaded, r.failed.len())
            }
        };
        let still = "registry artifacts are still being pulled or compiled";
        first_round(round, "registry references resolved", still).await;
        Some(follower.spawn())
    }
}
