//! The shape of a component, read from its bytes before it is compiled: what it imports, how
//! many core instances, linear memories and tables it creates, and the linear memory it starts
//! with. The loader checks each against the host's ceilings and the plugin's manifest, so a
//! component built with a language runtime (CPython, SpiderMonkey) is measured and refused with
//! a message that names the number and the setting, not a pool error from deep inside wasmtime.

use wasmparser::{Instance, Parser, Payload};

/// Bytes of a WebAssembly page.
const PAGE: u64 = 64 * 1024;

/// What a component creates when it is instantiated once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shape {
    /// The component's top-level imports, by name (`loan:reporting/data@1.0.0`, …).
    pub imports: Vec<String>,
    /// Core module instances, nested components included.
    pub core_instances: u32,
    /// Linear memories those instances define.
    pub memories: u32,
    /// Tables those instances define.
    pub tables: u32,
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
    initial_memory: u64,
    /// Initial bytes of the first memory, and the end of its last active data segment.
    first_memory: u64,
    data_end: u64,
}

impl Shape {
    /// Reads the shape of the component `wasm`. Fails on bytes wasmparser cannot read (the
    /// compiler would refuse them too, with its own message).
    pub fn of(wasm: &[u8]) -> Result<Shape, String> {
        let mut shape = Shape::default();
        // One frame per component being read (nested components push one); each holds its
        // core modules in index order. `None` while a core module's own sections are read.
        let mut components: Vec<Vec<Module>> = Vec::new();
        let mut module: Option<Module> = None;
        for payload in Parser::new(0).parse_all(wasm) {
            let payload = payload.map_err(|e| e.to_string())?;
            match payload {
                Payload::Version { encoding, .. } => match encoding {
                    wasmparser::Encoding::Component => components.push(Vec::new()),
                    wasmparser::Encoding::Module => module = Some(Module::default()),
                },
                Payload::MemorySection(reader) => {
                    if let Some(m) = module.as_mut() {
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
                }
                Payload::DataSection(reader) => {
                    if let Some(m) = module.as_mut() {
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
                                    Ok(wasmparser::Operator::I32Const { value }) => {
                                        u64::from(value as u32)
                                    }
                                    Ok(wasmparser::Operator::I64Const { value }) => value as u64,
                                    _ => 0,
                                };
                                let end = offset.saturating_add(segment.data.len() as u64);
                                m.data_end = m.data_end.max(end);
                            }
                        }
                    }
                }
                Payload::TableSection(reader) => {
                    if let Some(m) = module.as_mut() {
                        m.tables += reader.count();
                    }
                }
                Payload::ComponentImportSection(reader) if components.len() == 1 => {
                    for import in reader {
                        let import = import.map_err(|e| e.to_string())?;
                        shape.imports.push(import.name.name.to_string());
                    }
                }
                Payload::InstanceSection(reader) => {
                    let modules = components.last().map(Vec::as_slice).unwrap_or_default();
                    for instance in reader {
                        if let Instance::Instantiate { module_index, .. } =
                            instance.map_err(|e| e.to_string())?
                        {
                            // A module imported or aliased from elsewhere is not in the list: it
                            // still counts as an instance (wasmtime's own limit is the backstop).
                            let m = modules
                                .get(module_index as usize)
                                .copied()
                                .unwrap_or_default();
                            shape.core_instances += 1;
                            shape.memories += m.memories;
                            shape.tables += m.tables;
                            shape.initial_memory =
                                shape.initial_memory.saturating_add(m.initial_memory);
                            let image = m.data_end.div_ceil(PAGE) * PAGE;
                            shape.image_memory =
                                shape.image_memory.saturating_add(image.min(m.first_memory));
                        }
                    }
                }
                Payload::End(_) => {
                    if let Some(m) = module.take() {
                        if let Some(modules) = components.last_mut() {
                            modules.push(m);
                        }
                    } else {
                        components.pop();
                    }
                }
                _ => {}
            }
        }
        Ok(shape)
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
mod tests {
    use super::*;

    fn component(wat: &str) -> Vec<u8> {
        wat::parse_str(wat).expect("valid WAT")
    }

    #[test]
    fn counts_instances_memories_and_initial_pages_of_each_instantiation() {
        // Arrange: one module with a 3-page memory and a table, instantiated twice, and one
        // with nothing, instantiated once.
        let wasm = component(
            r#"(component
                 (import "loan:reporting/clock@1.0.0" (instance))
                 (core module $a (memory 3) (table 1 funcref))
                 (core module $b)
                 (core instance (instantiate $a))
                 (core instance (instantiate $a))
                 (core instance (instantiate $b)))"#,
        );
        // Act
        let shape = Shape::of(&wasm).unwrap();
        // Assert
        assert_eq!(shape.imports, vec!["loan:reporting/clock@1.0.0"]);
        assert_eq!(shape.core_instances, 3);
        assert_eq!(shape.memories, 2);
        assert_eq!(shape.tables, 2);
        assert_eq!(shape.initial_memory, 6 * PAGE);
        assert_eq!(shape.initial_memory_mib(), 1);
    }

    #[test]
    fn the_image_ends_with_the_last_initialised_page_and_never_passes_the_memory() {
        // Arrange: 8 pages, data up to a byte into page 3 (the image: 3 pages); a second
        // module whose data would pass its 1-page memory (it would trap) counts that page at most.
        let wasm = component(
            r#"(component
                 (core module $a (memory 8) (data (i32.const 131072) "x") (data (i32.const 10) "y"))
                 (core module $b (memory 1) (data (i32.const 70000) "z"))
                 (core module $c (memory 4))
                 (core instance (instantiate $a))
                 (core instance (instantiate $b))
                 (core instance (instantiate $c)))"#,
        );
        // Act
        let shape = Shape::of(&wasm).unwrap();
        // Assert
        assert_eq!(shape.initial_memory, 13 * PAGE);
        assert_eq!(
            shape.image_memory,
            4 * PAGE,
            "3 pages of $a, 1 of $b, none of $c"
        );
    }

    #[test]
    fn nested_components_count_their_own_instances() {
        let wasm = component(
            r#"(component
                 (component $inner
                   (core module $m (memory 16))
                   (core instance (instantiate $m)))
                 (core module $outer (memory 1))
                 (core instance (instantiate $outer))
                 (instance (instantiate $inner)))"#,
        );
        let shape = Shape::of(&wasm).unwrap();
        assert_eq!(shape.core_instances, 2);
        assert_eq!(shape.memories, 2);
        assert_eq!(shape.initial_memory, 17 * PAGE);
        assert!(shape.imports.is_empty(), "only the top level's imports");
    }

    #[test]
    fn wasi_imports_name_the_flag_that_removes_them() {
        let hint = wasi_hint("wasi:cli/environment@0.2.0");
        assert!(hint.contains("--stub-wasi") && hint.contains("--disable all"));
        assert!(!wasi_hint("acme:thing/x").contains("--stub-wasi"));
    }
}
