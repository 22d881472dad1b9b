//! The wasmtime settings every engine of the host is built from: the pooling allocator's slots
//! and limits for the host's engine, none for the compile worker's, the same compiled code
//! either way.

use std::sync::Arc;

use wasmtime::component::Component;
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::function_cache::FunctionCache;
use super::memories::Memories;
use crate::plugins::limits::MAX_CORE_INSTANCES_PER_COMPONENT;
use crate::plugins::limits::MAX_MEMORIES_PER_COMPONENT;
use crate::plugins::limits::MAX_MEMORY_MIB;
use crate::plugins::limits::MAX_TABLES_PER_COMPONENT;
use crate::plugins::limits::{
    KEEP_RESIDENT, MAX_INSTANCES, STACK_KEEP_RESIDENT, TABLE_KEEP_RESIDENT, TABLE_SLOTS,
};

/// The engine's settings; `pooling` selects the pooling allocator (the host's), without it
/// instances are allocated on demand (the compile worker, which instantiates nothing). The
/// compiled code is the same either way: the allocator is not part of what a compiled
/// component is checked against when it is loaded. `memories` sets how linear memory is
/// bounded, which is part of it: the compiled code differs. With `functions`, Cranelift reuses the
/// functions it finds there and adds the ones it compiles (the code is the same either way).
pub(in crate::plugins) fn engine_config(
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
pub(in crate::plugins) fn compile_without_pool(
    wasm: &[u8],
    memories: Memories,
    functions: Option<Arc<FunctionCache>>,
) -> wasmtime::Result<Vec<u8>> {
    let engine = Engine::new(&engine_config(false, memories, functions)?)?;
    Component::from_binary(&engine, wasm)?.serialize()
}

/// The pooling allocator's slots and limits.
pub(in crate::plugins) fn pool_config() -> PoolingAllocationConfig {
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
        .table_elements(crate::plugins::limits::MAX_TABLE_ELEMENTS)
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
