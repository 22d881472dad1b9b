//! The wasmtime engines shared by every plugin (one per way of bounding linear memory, see
//! [`Memories`]): component model, pooling allocator with copy-on-write memory images, epoch
//! interruption driven by a ticker thread, and a cache of precompiled components keyed by
//! content hash and engine compatibility.

use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use sha2::{Digest, Sha256};
use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::cache::{CacheMiss, CompileCache};
use super::compiler::{compile_isolated, Compiler};
use super::function_cache::{FunctionCache, FunctionTally};
use super::loader::WitVersion;
use super::manifest::MAX_MEMORY_MIB;
use super::mapped;
use super::memories::Memories;
use super::state::PluginState;

/// How a precompiled component's entry in the compile cache is named to end.
const COMPONENT_SUFFIX: &str = ".cwasm";

/// How often the epoch advances; deadlines are counted in these ticks.
pub const EPOCH_TICK: Duration = Duration::from_millis(2);

/// Bytes of each linear memory kept resident between instances.
const KEEP_RESIDENT: usize = 4 * 1024 * 1024;
/// Bytes of each table slot kept resident between instances: 16 KiB (1,024 elements), so
/// that the pool's tables hold at most [`TABLE_SLOTS`] × 16 KiB = 64 MiB while idle,
/// whatever the plugins did with them (a slot is 20,000 × 16 bytes = 320 KB).
const TABLE_KEEP_RESIDENT: usize = 16 * 1024;
/// Bytes of each async (fiber) stack kept resident between calls.
const STACK_KEEP_RESIDENT: usize = 256 * 1024;

/// Concurrent plugin instances (calls and load-time `describe`s) the pool holds.
pub const MAX_INSTANCES: u32 = 64;
/// The host's ceiling on the core module instances of one component, whatever its manifest
/// says: a Rust plugin has 3 or 4 (the module and its adapter shims), a JavaScript one
/// (componentize-js) 3, a Python one (componentize-py: CPython and its libraries as
/// separate modules) about 40. The manifest's `limits.core_instances` (default
/// [`super::manifest::DEFAULT_CORE_INSTANCES`]) is the per-plugin limit below it.
pub const MAX_CORE_INSTANCES_PER_COMPONENT: u32 = 64;
/// Linear memories one component may define (every toolchain above defines one; the
/// interpreters' shims none of their own).
pub const MAX_MEMORIES_PER_COMPONENT: u32 = 2;
/// Tables one component may define (CPython's modules bring one each). Checked at load from
/// the component's bytes, before it is compiled.
pub const MAX_TABLES_PER_COMPONENT: u32 = 64;
/// Table slots in the pool: every instance slot's worth of tables. Their elements are charged
/// to each call's memory as they are created or grown (`state::CallLimiter::table_growing`).
pub const TABLE_SLOTS: u32 = MAX_INSTANCES * MAX_TABLES_PER_COMPONENT;

/// One engine with its linkers: what components compiled for one [`Memories`] run on.
struct Flavour {
    engine: Engine,
    linker: Linker<PluginState>,
    linker_1_1: Linker<PluginState>,
    /// [`Engine::precompile_compatibility_hash`], hashed: in each cached component's name.
    compat_hash: String,
}

impl Flavour {
    fn new(memories: Memories, functions: Option<Arc<FunctionCache>>) -> anyhow::Result<Flavour> {
        let config = engine_config(true, memories, functions)
            .map_err(|e| anyhow::anyhow!("configuring the wasmtime engine: {e:#}"))?;
        let engine = Engine::new(&config)
            .map_err(|e| anyhow::anyhow!("creating the wasmtime engine: {e:#}"))?;
        let mut linker = Linker::new(&engine);
        let mut linker_1_1 = Linker::new(&engine);
        super::bindings::add_to_linkers(&mut linker, &mut linker_1_1)
            .map_err(|e| anyhow::anyhow!("linking host capabilities: {e:#}"))?;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut h);
        let compat_hash = format!("{:016x}", h.finish());
        Ok(Flavour {
            engine,
            linker,
            linker_1_1,
            compat_hash,
        })
    }
}

/// The engines, their linkers with every host capability, and the compile cache.
pub struct PluginEngine {
    checked: Flavour,
    guarded: Flavour,
    cache: Option<CompileCache>,
    /// Bytes the precompiled components may take in the cache's folder.
    cache_max_bytes: u64,
    /// The compiled functions the engines reuse and add when they compile in process (a
    /// function's key covers its code with the bounds checks in it, so both share it).
    functions: Option<Arc<FunctionCache>>,
    compiler: Compiler,
    metrics: Arc<crate::telemetry::Metrics>,
    _ticker: EpochTicker,
}

/// The engine's settings; `pooling` selects the pooling allocator (the host's), without it
/// instances are allocated on demand (the compile worker, which instantiates nothing). The
/// compiled code is the same either way: the allocator is not part of what a compiled
/// component is checked against when it is loaded. `memories` sets how linear memory is
/// bounded, which is part of it: the compiled code differs. With `functions`, Cranelift reuses the
/// functions it finds there and adds the ones it compiles (the code is the same either way).
fn engine_config(
    pooling: bool,
    memories: Memories,
    functions: Option<Arc<FunctionCache>>,
) -> wasmtime::Result<Config> {
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .epoch_interruption(true)
        .memory_init_cow(true)
        .max_wasm_stack(1024 * 1024)
        .async_stack_size(2 * 1024 * 1024);
    memories.configure(&mut config);
    if pooling {
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool_config()));
    }
    if let Some(functions) = functions {
        config.enable_incremental_compilation(functions)?;
    }
    Ok(config)
}

/// Compiles `wasm` with the host's settings for `memories` (and `functions`, when given) and
/// returns its compiled form (what the compile worker sends back; see [`super::compiler`]).
pub(super) fn compile_without_pool(
    wasm: &[u8],
    memories: Memories,
    functions: Option<Arc<FunctionCache>>,
) -> wasmtime::Result<Vec<u8>> {
    let engine = Engine::new(&engine_config(false, memories, functions)?)?;
    Component::from_binary(&engine, wasm)?.serialize()
}

/// The pooling allocator's slots and limits.
fn pool_config() -> PoolingAllocationConfig {
    let mut pool = PoolingAllocationConfig::default();
    // Per-component limits first: without them one component with many core modules
    // could take most of the pool's slots for itself.
    pool.total_component_instances(MAX_INSTANCES)
        .max_core_instances_per_component(MAX_CORE_INSTANCES_PER_COMPONENT)
        .max_memories_per_component(MAX_MEMORIES_PER_COMPONENT)
        .max_tables_per_component(MAX_TABLES_PER_COMPONENT)
        // Core instances and tables are counters and small allocations, not reserved
        // slots: enough that 64 interpreter-sized instances at once never run short.
        .total_core_instances(MAX_INSTANCES * MAX_CORE_INSTANCES_PER_COMPONENT)
        // Memories are the reserved slots (512 MiB of address space each).
        .total_memories(MAX_INSTANCES * MAX_MEMORIES_PER_COMPONENT)
        .total_tables(TABLE_SLOTS)
        .table_elements(super::state::MAX_TABLE_ELEMENTS)
        .total_stacks(MAX_INSTANCES)
        .max_memory_size(MAX_MEMORY_MIB as usize * 1024 * 1024)
        // Reset, rather than decommit, the pages a call dirtied (found with Linux's
        // PAGEMAP_SCAN where available): the next instance in the slot then finds its
        // stack and heap resident instead of page-faulting them in.
        .pagemap_scan(wasmtime::Enabled::Auto)
        .linear_memory_keep_resident(KEEP_RESIDENT)
        .table_keep_resident(TABLE_KEEP_RESIDENT)
        .async_stack_keep_resident(STACK_KEEP_RESIDENT)
        // Decommit a finished instance's pages at once: batching them kept up to 16
        // finished instances' memory resident (a memory bomb's 512 MiB each).
        .decommit_batch_size(1);
    pool
}

impl PluginEngine {
    /// Builds the engine. `cache_dir` holds precompiled components, authenticated with
    /// `cache_key` (either `None`: no cache on disk), up to `cache_max_bytes` of them (past
    /// it, the ones used least recently are removed); `compiler` says where components are
    /// compiled.
    pub fn new(
        cache_dir: Option<PathBuf>,
        cache_key: Option<[u8; 32]>,
        cache_max_bytes: u64,
        compiler: Compiler,
        metrics: Arc<crate::telemetry::Metrics>,
    ) -> anyhow::Result<PluginEngine> {
        let cache = match (cache_dir, cache_key) {
            (Some(dir), Some(key)) => Some(
                CompileCache::new(dir.clone(), key)
                    .with_context(|| format!("creating the compile cache {}", dir.display()))?,
            ),
            _ => None,
        };
        // Only a host that compiles in its own process uses the functions itself; a worker
        // opens them anew for each compilation.
        let functions = match (&cache, &compiler) {
            (Some(cache), Compiler::InProcess) => Some(Arc::new(
                FunctionCache::open(cache.dir(), cache.key()).with_context(|| {
                    format!("creating the function cache in {}", cache.dir().display())
                })?,
            )),
            _ => None,
        };
        let checked = Flavour::new(Memories::Checked, functions.clone())?;
        let guarded = Flavour::new(Memories::Guarded, functions.clone())?;
        let ticker = EpochTicker::start(vec![checked.engine.clone(), guarded.engine.clone()]);
        Ok(PluginEngine {
            checked,
            guarded,
            cache,
            cache_max_bytes,
            functions,
            compiler,
            metrics,
            _ticker: ticker,
        })
    }

    fn flavour(&self, memories: Memories) -> &Flavour {
        match memories {
            Memories::Checked => &self.checked,
            Memories::Guarded => &self.guarded,
        }
    }

    /// The linker with the host capabilities of `loan:reporting@{wit_version}`, for
    /// components compiled for `memories`.
    pub(crate) fn linker(
        &self,
        memories: Memories,
        wit_version: WitVersion,
    ) -> &Linker<PluginState> {
        let flavour = self.flavour(memories);
        match wit_version {
            WitVersion::V1_0 => &flavour.linker,
            WitVersion::V1_1 => &flavour.linker_1_1,
        }
    }

    /// Compiles a component for `memories` (see [`super::compiler`]), or loads its
    /// precompiled form from the cache when the entry's MAC verifies. Runs on the calling
    /// thread (use `spawn_blocking` from async code). Takes the component's bytes to free
    /// them here.
    pub fn compile(&self, wasm: Vec<u8>, memories: Memories) -> wasmtime::Result<Component> {
        let component = self.compile_or_read(&wasm, memories);
        drop(wasm);
        // What reading or compiling it allocated and freed (the component's bytes, the
        // compiled bytes read back) stays resident unless handed back now: the allocator
        // purges freed memory later, on a thread's next allocation, and this thread (a
        // blocking worker) may not allocate again for long.
        release_compile_memory();
        component
    }

    fn compile_or_read(&self, wasm: &[u8], memories: Memories) -> wasmtime::Result<Component> {
        let flavour = self.flavour(memories);
        let engine = &flavour.engine;
        let digest = hex::encode(Sha256::digest(wasm));
        let name = format!("{digest}-{}{COMPONENT_SUFFIX}", flavour.compat_hash);
        if let Some(cache) = &self.cache {
            match cache.read(&name) {
                Ok(bytes) => {
                    cache.mark_used(&name);
                    // SAFETY: the bytes were written by `Component::serialize` of an engine
                    // with the same compatibility hash (it is in the name), and their HMAC
                    // under this host's key verified, so nobody without the key (kept outside
                    // the cache directory) produced them.
                    match unsafe { mapped::deserialize(engine, Some(cache.dir()), &bytes) } {
                        Ok(c) => {
                            crate::telemetry::Metrics::count(
                                &self.metrics.plugin_compilations,
                                "cache",
                            );
                            return Ok(c);
                        }
                        Err(e) => {
                            tracing::warn!(path = %cache.path(&name).display(), error = %e, "discarding unusable precompiled plugin")
                        }
                    }
                }
                Err(CacheMiss::Absent) => {}
                Err(e) => {
                    tracing::warn!(path = %cache.path(&name).display(), error = %e, "not using a precompiled plugin")
                }
            }
        }
        let component = match &self.compiler {
            Compiler::InProcess => {
                // Compilations in process may overlap: each counts what was counted while it
                // ran.
                let before = self.functions.as_deref().map(|f| f.counts().tally());
                let component = Component::from_binary(engine, wasm)?;
                if let (Some(before), Some(functions)) = (before, self.functions.as_deref()) {
                    self.count_functions(functions.counts().tally().since(before));
                    functions.prune(super::function_cache::MAX_BYTES);
                }
                if let Some(cache) = &self.cache {
                    self.keep(cache, &name, &component.serialize()?);
                }
                component
            }
            Compiler::Isolated { program, limits } => {
                let output =
                    compile_isolated(program, *limits, memories, wasm, self.cache.as_ref())
                        .map_err(wasmtime::Error::msg)?;
                if let Some(counts) = output.functions {
                    self.count_functions(counts);
                }
                if let Some(cache) = &self.cache {
                    self.keep(cache, &name, &output.bytes);
                }
                // SAFETY: the bytes come from `Component::serialize` in a worker process of
                // this same binary (`program` is this host's own executable), over a pipe
                // only it writes; `deserialize` checks the engine settings they were compiled
                // with against this engine's.
                let dir = self.cache.as_ref().map(CompileCache::dir);
                unsafe { mapped::deserialize(engine, dir, &output.bytes) }?
            }
        };
        crate::telemetry::Metrics::count(&self.metrics.plugin_compilations, "compiled");
        Ok(component)
    }

    /// Counts a compilation's functions by where their code came from, and logs them.
    fn count_functions(&self, t: FunctionTally) {
        let family = &self.metrics.plugin_compiled_functions;
        for (kind, n) in [
            ("reused", t.reused),
            ("compiled", t.compiled),
            ("refused", t.refused),
        ] {
            crate::telemetry::Metrics::count_by(family, kind, n);
        }
        tracing::info!(
            reused = t.reused,
            compiled = t.compiled,
            refused = t.refused,
            "compiled a component's functions"
        );
    }

    /// Keeps a compiled component in the cache as entry `name` (a failure is logged: the
    /// component serves, and is compiled again next time), then removes the components used
    /// least recently if the cache is over its bound.
    fn keep(&self, cache: &CompileCache, name: &str, bytes: &[u8]) {
        if let Err(e) = cache.write(name, bytes) {
            tracing::warn!(path = %cache.path(name).display(), error = %e, "cannot cache precompiled plugin");
        }
        // Only the components: the folder also holds the dev IdP's key and other folders.
        let is_component = |n: &str| n.ends_with(COMPONENT_SUFFIX);
        let removed = cache.prune(self.cache_max_bytes, is_component, Some(name));
        if removed > 0 {
            tracing::info!(
                removed,
                bound_mib = self.cache_max_bytes / (1024 * 1024),
                "removed the precompiled plugins used least recently from the compile cache"
            );
        }
    }
}

extern "C" {
    /// mimalloc's `mi_collect`: returns the calling thread's free memory to the system.
    fn mi_collect(force: bool);
}

/// Hands back to the system the memory a compilation freed. Compiling a language runtime's
/// component (CPython, SpiderMonkey: 10 to 20 MB of WebAssembly) takes hundreds of MiB for a
/// few seconds, on wasmtime's compile threads; their allocator heaps would keep it resident
/// while the threads sit idle (measured: 860 MiB resident after a first start compiling the
/// Python example, against 197 MiB when it came from the cache). Reading a compiled component
/// (from the cache, or from the compile worker) leaves its bytes freed in the reading
/// thread's heap the same way: 50 MiB of a host's 93 MiB with the six shipped tools loaded.
fn release_compile_memory() {
    // SAFETY: `mi_collect` only releases free memory of the calling thread's heap (mimalloc is
    // the global allocator, host/src/lib.rs); it is safe to call on any thread at any time.
    rayon::broadcast(|_| unsafe { mi_collect(true) });
    unsafe { mi_collect(true) };
}

/// Advances the engines' epoch every [`EPOCH_TICK`] on its own thread, so deadlines hold
/// even when every async worker is busy. Stops when dropped.
struct EpochTicker {
    stop: Arc<AtomicBool>,
}

impl EpochTicker {
    fn start(engines: Vec<Engine>) -> EpochTicker {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        std::thread::Builder::new()
            .name("loanhost-epoch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    for engine in &engines {
                        engine.increment_epoch();
                    }
                }
            })
            .expect("spawning the epoch ticker thread");
        EpochTicker { stop }
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
