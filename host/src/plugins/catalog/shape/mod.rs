//! The shape of a component, read from its bytes before it is compiled: what it imports, how
//! many core instances, linear memories and tables it creates, and the linear memory it starts
//! with. The loader checks each against the host's ceilings and the plugin's manifest, so a
//! component built with a language runtime (CPython, SpiderMonkey) is measured and refused with
//! a message that names the number and the setting, not a pool error from deep inside wasmtime.

use wasmparser::{
    ComponentAlias, ComponentExternalKind, ComponentInstance, ComponentOuterAliasKind,
    ComponentTypeRef, Instance, Parser, Payload,
};

/// Bytes of a WebAssembly page.
const PAGE: u64 = 64 * 1024;

/// What a component creates when it is instantiated once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shape {
    /// The component's top-level imports, by name (`loan:reporting/data@1.0.0`, …).
    pub imports: Vec<String>,
    /// The component's top-level exports, by name (`loan:reporting/tool@1.0.0`).
    pub exports: Vec<String>,
    /// Core module instances, those of nested components counted once per instantiation.
    pub core_instances: u32,
    /// Linear memories those instances define.
    pub memories: u32,
    /// Tables those instances define.
    pub tables: u32,
    /// Elements those tables start with.
    pub table_elements: u64,
    /// Bytes of linear memory those instances start with (their memories' minimum sizes).
    pub initial_memory: u64,
    /// Of those, the bytes the modules' data segments initialise (up to the last initialised
    /// byte of each memory, in whole pages): the image that copy-on-write maps into every
    /// instance. The rest of the initial memory is fresh zeroed pages, like memory grown.
    pub image_memory: u64,
}

/// One core module of a component: what one instance of it defines.
#[derive(Debug, Clone, Copy, Default)]
struct Module {
    memories: u32,
    tables: u32,
    table_elements: u64,
    initial_memory: u64,
    /// Initial bytes of the first memory, and the end of its last active data segment.
    first_memory: u64,
    data_end: u64,
}

/// What instantiating something once creates (a module, or a whole component).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Totals {
    core_instances: u32,
    memories: u32,
    tables: u32,
    table_elements: u64,
    initial_memory: u64,
    image_memory: u64,
}

impl Totals {
    fn of_module(m: &Module) -> Totals {
        let image = m.data_end.div_ceil(PAGE) * PAGE;
        Totals {
            core_instances: 1,
            memories: m.memories,
            tables: m.tables,
            table_elements: m.table_elements,
            initial_memory: m.initial_memory,
            image_memory: image.min(m.first_memory),
        }
    }

    fn add(&mut self, o: &Totals) {
        self.core_instances = self.core_instances.saturating_add(o.core_instances);
        self.memories = self.memories.saturating_add(o.memories);
        self.tables = self.tables.saturating_add(o.tables);
        self.table_elements = self.table_elements.saturating_add(o.table_elements);
        self.initial_memory = self.initial_memory.saturating_add(o.initial_memory);
        self.image_memory = self.image_memory.saturating_add(o.image_memory);
    }
}

/// One component being read: its core module and component index spaces (what instantiating
/// each entry creates) and what the component itself has created so far.
/// `None` in an index space: an entry whose contents the bytes do not say.
#[derive(Debug, Default)]
struct Frame {
    modules: Vec<Option<Totals>>,
    components: Vec<Option<Totals>>,
    totals: Totals,
}

impl Shape {
    /// Reads the shape of the component `wasm`. Fails on bytes wasmparser cannot read (the
    /// compiler would refuse them too, with its own message).
    ///
    /// A nested component's instances count once per instantiation of it (a component defined
    /// but never instantiated creates nothing). Instantiating a module or component whose
    /// contents the bytes do not say (one imported, or taken from another instance's exports)
    /// is refused: what it creates could not be counted. The toolchains plugins are built with
    /// never do that.
    pub fn of(wasm: &[u8]) -> Result<Shape, String> {
        let mut reader = ShapeReader::default();
        for payload in Parser::new(0).parse_all(wasm) {
            match payload.map_err(|e| e.to_string())? {
                Payload::Version { encoding, .. } => match encoding {
                    wasmparser::Encoding::Component => reader.frames.push(Frame::default()),
                    wasmparser::Encoding::Module => reader.module = Some(Module::default()),
                },
                Payload::MemorySection(r) => reader.memories(r)?,
                Payload::DataSection(r) => reader.data(r)?,
                Payload::TableSection(r) => reader.tables(r)?,
                Payload::ComponentImportSection(r) => reader.imports(r)?,
                Payload::ComponentExportSection(r) => reader.exports(r)?,
                Payload::ComponentAliasSection(r) => reader.aliases(r)?,
                Payload::InstanceSection(r) => reader.instances(r)?,
                Payload::ComponentInstanceSection(r) => reader.component_instances(r)?,
                Payload::End(_) => reader.end(),
                _ => {}
            }
        }
        Ok(reader.shape)
    }

    /// The initial linear memory in MiB, rounded up (as a manifest's `memory_mib` counts).
    pub fn initial_memory_mib(&self) -> u64 {
        self.initial_memory.div_ceil(1024 * 1024)
    }

    /// The data image in MiB, rounded up.
    pub fn image_memory_mib(&self) -> u64 {
        self.image_memory.div_ceil(1024 * 1024)
    }
}

/// The state of one reading: the shape so far, the components open (outermost first) and
/// the core module open, if any.
#[derive(Default)]
struct ShapeReader {
    shape: Shape,
    frames: Vec<Frame>,
    module: Option<Module>,
}

impl ShapeReader {
    /// A core module's memories: how many, the first one's and all of their initial bytes.
    fn memories(&mut self, reader: wasmparser::MemorySectionReader) -> Result<(), String> {
        if let Some(m) = self.module.as_mut() {
            for memory in reader {
                let memory = memory.map_err(|e| e.to_string())?;
                let page = 1u64 << memory.page_size_log2.unwrap_or(16);
                let bytes = memory.initial.saturating_mul(page);
                if m.memories == 0 {
                    m.first_memory = bytes;
                }
                m.memories += 1;
                m.initial_memory = m.initial_memory.saturating_add(bytes);
            }
        }
        Ok(())
    }

    /// A core module's active data segments in its first memory: where its data image ends.
    fn data(&mut self, reader: wasmparser::DataSectionReader) -> Result<(), String> {
        if let Some(m) = self.module.as_mut() {
            for segment in reader {
                let segment = segment.map_err(|e| e.to_string())?;
                if let wasmparser::DataKind::Active {
                    memory_index: 0,
                    offset_expr,
                } = segment.kind
                {
                    // A segment at an offset that is not a constant (a global's
                    // value) counts from 0: the image is then underestimated,
                    // which charges more, never less.
                    let offset = match offset_expr.get_operators_reader().read() {
                        Ok(wasmparser::Operator::I32Const { value }) => u64::from(value as u32),
                        Ok(wasmparser::Operator::I64Const { value }) => value as u64,
                        _ => 0,
                    };
                    let end = offset.saturating_add(segment.data.len() as u64);
                    m.data_end = m.data_end.max(end);
                }
            }
        }
        Ok(())
    }

    /// A core module's tables and their initial elements.
    fn tables(&mut self, reader: wasmparser::TableSectionReader) -> Result<(), String> {
        if let Some(m) = self.module.as_mut() {
            for table in reader {
                let table = table.map_err(|e| e.to_string())?;
                m.tables += 1;
                m.table_elements = m.table_elements.saturating_add(table.ty.initial);
            }
        }
        Ok(())
    }

    /// A component's imports: the top level's names, and the entries they add to the index spaces.
    fn imports(&mut self, reader: wasmparser::ComponentImportSectionReader) -> Result<(), String> {
        let depth = self.frames.len();
        for import in reader {
            let import = import.map_err(|e| e.to_string())?;
            if depth == 1 {
                self.shape.imports.push(import.name.name.to_string());
            }
            if let Some(frame) = self.frames.last_mut() {
                match import.ty {
                    ComponentTypeRef::Module(_) => frame.modules.push(None),
                    ComponentTypeRef::Component(_) => frame.components.push(None),
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// A component's exports: the top level's names, and the entries they add to the index spaces.
    fn exports(&mut self, reader: wasmparser::ComponentExportSectionReader) -> Result<(), String> {
        let depth = self.frames.len();
        for export in reader {
            let export = export.map_err(|e| e.to_string())?;
            if depth == 1 {
                self.shape.exports.push(export.name.name.to_string());
            }
            // An export adds an entry to its kind's index space.
            if let Some(frame) = self.frames.last_mut() {
                let at = export.index as usize;
                match export.kind {
                    ComponentExternalKind::Module => {
                        let t = frame.modules.get(at).copied().flatten();
                        frame.modules.push(t);
                    }
                    ComponentExternalKind::Component => {
                        let t = frame.components.get(at).copied().flatten();
                        frame.components.push(t);
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Aliases of modules and components: the entry each adds, known when it is an outer one.
    fn aliases(&mut self, reader: wasmparser::ComponentAliasSectionReader) -> Result<(), String> {
        let depth = self.frames.len();
        for alias in reader {
            let alias = alias.map_err(|e| e.to_string())?;
            let (modules, entry) = match alias {
                ComponentAlias::Outer { kind, count, index } => {
                    let outer = depth.checked_sub(1 + count as usize);
                    let outer = outer.and_then(|i| self.frames.get(i));
                    match kind {
                        ComponentOuterAliasKind::CoreModule => (
                            true,
                            outer
                                .and_then(|f| f.modules.get(index as usize))
                                .copied()
                                .flatten(),
                        ),
                        ComponentOuterAliasKind::Component => (
                            false,
                            outer
                                .and_then(|f| f.components.get(index as usize))
                                .copied()
                                .flatten(),
                        ),
                        _ => continue,
                    }
                }
                ComponentAlias::InstanceExport {
                    kind: ComponentExternalKind::Module,
                    ..
                } => (true, None),
                ComponentAlias::InstanceExport {
                    kind: ComponentExternalKind::Component,
                    ..
                } => (false, None),
                _ => continue,
            };
            if let Some(frame) = self.frames.last_mut() {
                if modules {
                    frame.modules.push(entry);
                } else {
                    frame.components.push(entry);
                }
            }
        }
        Ok(())
    }

    /// Core instances: each instantiation adds what its module creates.
    fn instances(&mut self, reader: wasmparser::InstanceSectionReader) -> Result<(), String> {
        for instance in reader {
            if let Instance::Instantiate { module_index, .. } =
                instance.map_err(|e| e.to_string())?
            {
                if let Some(frame) = self.frames.last_mut() {
                    let t = frame
                        .modules
                        .get(module_index as usize)
                        .copied()
                        .flatten()
                        .ok_or_else(|| uncountable("module", module_index))?;
                    frame.totals.add(&t);
                }
            }
        }
        Ok(())
    }

    /// Component instances: each instantiation adds what its component creates.
    fn component_instances(
        &mut self,
        reader: wasmparser::ComponentInstanceSectionReader,
    ) -> Result<(), String> {
        for instance in reader {
            if let ComponentInstance::Instantiate {
                component_index, ..
            } = instance.map_err(|e| e.to_string())?
            {
                if let Some(frame) = self.frames.last_mut() {
                    let t = frame
                        .components
                        .get(component_index as usize)
                        .copied()
                        .flatten()
                        .ok_or_else(|| uncountable("component", component_index))?;
                    frame.totals.add(&t);
                }
            }
        }
        Ok(())
    }

    /// The end of a module (its totals join its component's index space) or of a component
    /// (its totals join its parent's, or are the shape's at the top).
    fn end(&mut self) {
        if let Some(m) = self.module.take() {
            if let Some(frame) = self.frames.last_mut() {
                frame.modules.push(Some(Totals::of_module(&m)));
            }
        } else if let Some(done) = self.frames.pop() {
            match self.frames.last_mut() {
                Some(parent) => parent.components.push(Some(done.totals)),
                None => {
                    let t = done.totals;
                    self.shape.core_instances = t.core_instances;
                    self.shape.memories = t.memories;
                    self.shape.tables = t.tables;
                    self.shape.table_elements = t.table_elements;
                    self.shape.initial_memory = t.initial_memory;
                    self.shape.image_memory = t.image_memory;
                }
            }
        }
    }
}

/// Why instantiating entry `index` of a `kind` index space is refused.
fn uncountable(kind: &str, index: u32) -> String {
    format!(
        "it instantiates {kind} {index}, which it does not define (imported, or taken from \
         another instance's exports): what that creates cannot be counted from the bytes, so \
         this host refuses it"
    )
}

/// How the imports outside the host's interfaces are removed, by the tool that put them
/// there (recognised from the interface names its output imports).
pub fn wasi_hint(import: &str) -> &'static str {
    if import.starts_with("wasi:") {
        "WASI is not offered to plugins: build with `componentize-py … componentize --stub-wasi` \
         (Python), `jco componentize … --disable all` (JavaScript/TypeScript), or for Rust the \
         wasm32-unknown-unknown target (scripts/build-plugin.sh does each)"
    } else {
        "plugins may import only the loan:reporting interfaces"
    }
}

#[cfg(test)]
mod tests;
