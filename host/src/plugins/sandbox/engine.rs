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
use wasmtime::Engine;

use super::cache::{CacheMiss, CompileCache};
use super::compiler::{compile_isolated, Compiler};
use super::engine_config::engine_config;
use super::function_cache::{FunctionCache, FunctionTally};
use super::mapped;
use super::memories::Memories;
use super::state::PluginState;
use crate::plugins::wit::WitVersion;

/// How a precompiled component's entry in the compile cache is named to end.
const COMPONENT_SUFFIX: &str = ".cwasm";

/// How often the epoch advances; deadlines are counted in these ticks.
pub const EPOCH_TICK: Duration = Duration::from_millis(2);

/// One engine with its linkers: what components compiled for one [`Memories`] run on.
struct Flavour {
    engine: Engine,
    linker: Linker<PluginState>,
    linker_1_1: Linker<PluginState>,
    linker_1_2: Linker<PluginState>,
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
        let mut linker_1_2 = Linker::new(&engine);
        super::bindings::add_to_linkers(&mut linker, &mut linker_1_1, &mut linker_1_2)
            .map_err(|e| anyhow::anyhow!("linking host capabilities: {e:#}"))?;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut h);
        let compat_hash = format!("{:016x}", h.finish());
        Ok(Flavour {
            engine,
            linker,
            linker_1_1,
            linker_1_2,
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
            WitVersion::V1_2 => &flavour.linker_1_2,
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
