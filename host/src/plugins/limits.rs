//! Every limit the sandbox holds a plugin to, on the floor every room of plugins/ stands on:
//! a component's shape (core instances, memories, tables), an instance's memory and table
//! elements, and a view's size.

/// The host's ceiling on the core module instances of one component, whatever its manifest
/// says: a Rust plugin has 3 or 4 (the module and its adapter shims), a JavaScript one
/// (componentize-js) 3, a Python one (componentize-py: CPython and its libraries as
/// separate modules) about 40. The manifest's `limits.core_instances` (default
/// [`DEFAULT_CORE_INSTANCES`]) is the per-plugin limit below it.
pub const MAX_CORE_INSTANCES_PER_COMPONENT: u32 = 64;

/// Linear memories one component may define (every toolchain above defines one; the
/// interpreters' shims none of their own).
pub const MAX_MEMORIES_PER_COMPONENT: u32 = 2;

/// Tables one component may define (CPython's modules bring one each). Checked at load from
/// the component's bytes, before it is compiled.
pub const MAX_TABLES_PER_COMPONENT: u32 = 64;

/// Elements one table may have: the pool's slot size (`sandbox/engine.rs` sizes each table slot
/// for this many).
pub const MAX_TABLE_ELEMENTS: usize = 20_000;

/// Bytes one table element is charged as: wasmtime's largest element (a continuation
/// reference, 16 bytes; a function reference is 8), so a table is never charged less than it
/// holds.
pub const TABLE_ELEMENT_BYTES: u64 = 16;

/// Largest memory a manifest may grant to one instance (also the pooling slot size).
pub const MAX_MEMORY_MIB: u32 = 512;

/// Default core module instances a plugin's component may create (a Rust or JavaScript
/// plugin has 3 or 4; a Python one needs `core_instances = 48` in its manifest).
pub const DEFAULT_CORE_INSTANCES: u32 = 8;

/// Largest `core_instances` a manifest may set (the engine's own ceiling).
pub const MAX_CORE_INSTANCES: u32 = MAX_CORE_INSTANCES_PER_COMPONENT;

/// Largest view (`<tool>.html`) a plugin may ship: a chart library and the MCP Apps SDK
/// bundled into one file take about 400 KiB.
pub const MAX_VIEW_BYTES: u64 = 2 * 1024 * 1024;

/// Concurrent plugin instances (calls and load-time `describe`s) the pool holds.
pub const MAX_INSTANCES: u32 = 64;

/// Table slots in the pool: every instance slot's worth of tables. Their elements are charged
/// to each call's memory as they are created or grown (`state::CallLimiter::table_growing`).
pub const TABLE_SLOTS: u32 = MAX_INSTANCES * MAX_TABLES_PER_COMPONENT;

/// Bytes of each linear memory kept resident between instances.
pub const KEEP_RESIDENT: usize = 4 * 1024 * 1024;

/// Bytes of each table slot kept resident between instances: 16 KiB (1,024 elements), so
/// that the pool's tables hold at most [`TABLE_SLOTS`] × 16 KiB = 64 MiB while idle,
/// whatever the plugins did with them (a slot is 20,000 × 16 bytes = 320 KB).
pub const TABLE_KEEP_RESIDENT: usize = 16 * 1024;

/// Bytes of each async (fiber) stack kept resident between calls.
pub const STACK_KEEP_RESIDENT: usize = 256 * 1024;
