//! How the plugin host is set up: its cache, signature policy, clock, database, memory and
//! budgets ([`HostOptions`]), with the defaults a server and the plugin tooling start from.

use std::path::PathBuf;
use std::sync::Arc;

use super::callers::{CallerLimits, Fleet};
use super::catalog::signature::SignaturePolicy;
use super::sandbox::cache;
use super::sandbox::compiler::{CompileLimits, Compiler};
use crate::clock::Clock;

/// How the plugin host is set up (see [`super::Plugins::with_options`]).
#[derive(Clone)]
pub struct HostOptions {
    /// Precompiled components (`None`: compile in memory only).
    pub cache_dir: Option<PathBuf>,
    /// The key that authenticates precompiled components (kept outside `cache_dir`).
    pub cache_key: Option<[u8; 32]>,
    /// Disk the precompiled components may take, in MiB: past it, after a compilation, the
    /// ones used least recently are removed.
    pub cache_max_mib: u64,
    /// Which plugins are trusted.
    pub policy: SignaturePolicy,
    /// Today's date.
    pub clock: Clock,
    /// The database of the `data` capability (its report pool).
    pub db: Option<crate::data::Db>,
    /// Organisation-wide statements run at once (0: half the cores, at least one).
    pub heavy_queries: usize,
    /// Linear memory of all plugin calls together, in MiB.
    pub memory_mib: u64,
    /// Longest a call waits for an instance slot.
    pub permit_wait: std::time::Duration,
    /// Per-caller budgets.
    pub callers: CallerLimits,
    /// The fleet whose ledger the per-minute budgets are leased from (`None`: this host's).
    pub fleet: Option<Arc<Fleet>>,
    /// Plugin log lines per second, host-wide.
    pub log_lines_per_second: u32,
    /// Where the host counts what it does.
    pub metrics: Arc<crate::telemetry::Metrics>,
    /// Where components are compiled (a worker process of this binary, when it is
    /// `loanhost`).
    pub compiler: Compiler,
    /// Record every call's stage marks in its [`super::CallUsage`] (`languages`'s profile):
    /// a guest's `loanhost-profile:` log lines become marks instead of log lines.
    pub profile_calls: bool,
    /// Every call has an audit line (`LOANHOST_AUDIT_LOG` is not `off`): the host's own
    /// `tool call` log line is then at `debug`, the audit line being the call's record; else
    /// at `info`.
    pub calls_audited: bool,
}

impl HostOptions {
    /// Defaults: no cache, no database, 256 MiB of plugin memory, 5 s for a slot.
    pub fn new(policy: SignaturePolicy, clock: Clock) -> HostOptions {
        HostOptions {
            cache_dir: None,
            cache_key: None,
            cache_max_mib: DEFAULT_CACHE_MAX_MIB,
            policy,
            clock,
            db: None,
            heavy_queries: 0,
            memory_mib: DEFAULT_PLUGIN_MEMORY_MIB,
            permit_wait: std::time::Duration::from_secs(5),
            callers: CallerLimits::default(),
            fleet: None,
            log_lines_per_second: 200,
            metrics: Arc::default(),
            compiler: Compiler::for_this_process(CompileLimits::default()),
            profile_calls: false,
            calls_audited: false,
        }
    }

    /// Precompiled components in the user's own cache folder (`$XDG_CACHE_HOME/loanhost/
    /// compiled`, authenticated with the key beside it), for the plugin tooling (`plugin
    /// check`, `plugin run`): a Python or JavaScript component takes 20 to 30 s to compile and
    /// is then read back in a fraction of a second. Without a usable cache folder, plugins are
    /// compiled in memory, as before.
    pub fn with_user_cache(mut self) -> HostOptions {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
        let Some(base) = base.map(|b| b.join("loanhost")) else {
            return self;
        };
        let key = std::fs::create_dir_all(&base)
            .and_then(|_| cache::load_or_create_key(&base.join("compiled.key")));
        match key {
            Ok(key) => {
                self.cache_dir = Some(base.join("compiled"));
                self.cache_key = Some(key);
            }
            Err(e) => tracing::debug!(error = %e, "no compile cache for the plugin tooling"),
        }
        self
    }
}

/// Default bound of the precompiled components on disk, in MiB (an interpreter plugin's
/// compiled component takes 20 to 60 MB; a new one is kept for every new build).
pub const DEFAULT_CACHE_MAX_MIB: u64 = 2048;

/// Default host-wide plugin memory, in MiB.
pub const DEFAULT_PLUGIN_MEMORY_MIB: u64 = 256;
