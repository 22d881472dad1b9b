//! The per-call store state: who is calling, what the plugin was granted, and the limits
//! that bound this one call. A fresh state (and `Store`) is made for every call.

use std::sync::Arc;
use std::time::Instant;

use wasmtime::ResourceLimiter;

use crate::auth::Identity;
use crate::clock::Clock;
use crate::plugins::manifest::Manifest;

/// The call a store serves; absent while the host asks a plugin to `describe` itself.
#[derive(Debug, Clone)]
pub struct CallContext {
    /// The resolved caller.
    pub identity: Identity,
    /// A per-process call number, for log correlation.
    pub call_id: u64,
}

/// Store data of one plugin instance.
pub struct PluginState {
    /// The plugin's manifest (name, grants, limits).
    pub manifest: Arc<Manifest>,
    /// The call, or `None` during `describe`.
    pub call: Option<CallContext>,
    /// Today's date source.
    pub clock: Clock,
    /// The data store (absent in `loanhost plugin check`).
    pub db: Option<crate::data::Db>,
    /// Memory and table limits; records whether a limit was hit.
    pub limiter: CallLimiter,
    /// When the call's wall-clock deadline passes.
    pub deadline: Instant,
    /// Set by the epoch callback when the deadline interrupted the guest.
    pub timed_out: bool,
    /// Log lines written so far in this call.
    pub log_lines: u32,
}

/// Bounds linear memory and tables of one instance and remembers a refusal, so the host can
/// report "memory limit" rather than a bare trap.
#[derive(Debug)]
pub struct CallLimiter {
    max_memory_bytes: usize,
    /// Set when a memory grow past the limit was refused.
    pub memory_exceeded: bool,
}

impl CallLimiter {
    /// A limiter allowing `memory_mib` MiB of linear memory.
    pub fn new(memory_mib: u32) -> Self {
        CallLimiter {
            max_memory_bytes: memory_mib as usize * 1024 * 1024,
            memory_exceeded: false,
        }
    }
}

/// Error raised (as a trap) when the guest grows memory past its limit.
#[derive(Debug, thiserror::Error)]
#[error("memory limit exceeded")]
pub struct MemoryLimitExceeded;

const MAX_TABLE_ELEMENTS: usize = 100_000;

impl ResourceLimiter for CallLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.max_memory_bytes {
            self.memory_exceeded = true;
            return Err(wasmtime::Error::new(MemoryLimitExceeded));
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }
}
