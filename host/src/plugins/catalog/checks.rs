//! What a plugin's files must be before anything is compiled: each file's size (read once,
//! capped), the component's imports, exports and shape against the host's interfaces and
//! ceilings and the manifest's limits.

use std::io::Read as _;
use std::path::Path;

use wasmtime::component::types::ComponentItem;
use wasmtime::component::Component;

use super::manifest::Manifest;
use super::shape::{wasi_hint, Shape};
use crate::plugins::limits::TABLE_ELEMENT_BYTES;
use crate::plugins::limits::{DEFAULT_CORE_INSTANCES, MAX_CORE_INSTANCES};
use crate::plugins::limits::{MAX_MEMORIES_PER_COMPONENT, MAX_TABLES_PER_COMPONENT};
use crate::plugins::wit::{WitVersion, SUPPORTED_WIT_VERSIONS, WIT_PACKAGE};

/// The interfaces a plugin may import (besides none at all).
const IMPORTABLE: &[&str] = &[
    "types",
    "caller",
    "clock",
    "log",
    "data",
    "listing",
    "people",
    "licensing",
    "pricing",
];

/// Checks what the component's shape says before it is compiled: only the host's imports
/// (naming the build flag that removes WASI), and no more core instances, memories or initial
/// memory than the manifest and the engine allow.
pub(in crate::plugins) fn check_shape(shape: &Shape, manifest: &Manifest) -> Result<(), String> {
    for name in &shape.imports {
        if !is_importable(name) {
            return Err(foreign_import(name));
        }
    }
    let limits = &manifest.limits;
    if shape.core_instances > limits.core_instances {
        return Err(format!(
            "the component creates {} core module instances; its manifest allows {} \
             (limits.core_instances: default {DEFAULT_CORE_INSTANCES}, at most \
             {MAX_CORE_INSTANCES}; a Python plugin built with componentize-py needs about 40)",
            shape.core_instances, limits.core_instances
        ));
    }
    if shape.memories > MAX_MEMORIES_PER_COMPONENT {
        return Err(format!(
            "the component defines {} linear memories; the host allows {MAX_MEMORIES_PER_COMPONENT}",
            shape.memories
        ));
    }
    if shape.tables > MAX_TABLES_PER_COMPONENT {
        return Err(format!(
            "the component defines {} tables; the host allows {MAX_TABLES_PER_COMPONENT}",
            shape.tables
        ));
    }
    if shape.initial_memory_mib() > u64::from(limits.memory_mib) {
        return Err(format!(
            "the component starts with {} MiB of linear memory, more than its manifest's \
             limits.memory_mib = {} (a Python or JavaScript runtime starts with 10 to 15 MiB: \
             give it at least 32)",
            shape.initial_memory_mib(),
            limits.memory_mib
        ));
    }
    let table_bytes = shape.table_elements.saturating_mul(TABLE_ELEMENT_BYTES);
    let start = shape.initial_memory.saturating_add(table_bytes);
    if start > u64::from(limits.memory_mib) * 1024 * 1024 {
        return Err(format!(
            "the component starts with {} bytes of linear memory and {} table elements \
             ({table_bytes} bytes at {TABLE_ELEMENT_BYTES} each), more than its manifest's \
             limits.memory_mib = {}: tables are charged as memory",
            shape.initial_memory, shape.table_elements, limits.memory_mib
        ));
    }
    Ok(())
}

/// Why an import outside the host's interfaces is refused, and how the build removes it.
fn foreign_import(name: &str) -> String {
    format!(
        "imports `{name}`, which this host does not provide: plugins may import only the \
         {WIT_PACKAGE} interfaces ({}); {}",
        IMPORTABLE.join(", "),
        wasi_hint(name)
    )
}

/// Whether an import names one of the host's interfaces (`loan:reporting/<interface>@<v>`).
/// Importing `listing` grants nothing: the manifest's listing grant is checked on every list
/// (an interpreted plugin's component imports every interface of its world, used or not).
fn is_importable(name: &str) -> bool {
    name.strip_prefix(WIT_PACKAGE)
        .and_then(|rest| rest.strip_prefix('/'))
        .and_then(|rest| rest.split_once('@'))
        .is_some_and(|(interface, _)| IMPORTABLE.contains(&interface))
}

/// Checks every import (first: a component that asks for anything outside `loan:reporting`,
/// WASI included, is refused whatever it exports), then finds the WIT version of the exported
/// tool interface, which every import must share.
pub(in crate::plugins) fn check_interfaces(
    engine: &wasmtime::Engine,
    component: &Component,
) -> Result<WitVersion, String> {
    let ty = component.component_type();
    let imports: Vec<String> = ty.imports(engine).map(|(n, _)| n.to_string()).collect();
    // Checked from the bytes already (`check_shape`); checked again on what was compiled.
    if let Some(name) = imports.iter().find(|n| !is_importable(n)) {
        return Err(foreign_import(name));
    }
    let export_prefix = format!("{WIT_PACKAGE}/tool@");
    // Only an exported instance counts as the tool (the bytes' names say nothing of kinds).
    let exports: Vec<String> = ty
        .exports(engine)
        .filter(|(name, item)| {
            !name.starts_with(&export_prefix)
                || matches!(item.ty, ComponentItem::ComponentInstance(_))
        })
        .map(|(n, _)| n.to_string())
        .collect();
    tool_version(&exports, &imports)
}

/// The `loan:reporting` version a component's exports (`exports`, by name) offer as its tool,
/// checked against its imports' versions (the imports themselves are checked by
/// [`check_shape`]) and the versions this host serves: read from the bytes before compiling
/// ([`crate::plugins::Shape`]) and again from the compiled component.
pub(in crate::plugins) fn tool_version(
    exports: &[String],
    imports: &[String],
) -> Result<WitVersion, String> {
    let export_prefix = format!("{WIT_PACKAGE}/tool@");
    let found = exports
        .iter()
        .find_map(|name| name.strip_prefix(&export_prefix))
        .map(str::to_string)
        .ok_or_else(|| {
            format!(
                "does not export `{WIT_PACKAGE}/tool` (exports: {}); is it a loanhost plugin?",
                if exports.is_empty() {
                    "none".into()
                } else {
                    exports.join(", ")
                }
            )
        })?;
    let Some(version) = WitVersion::parse(&found) else {
        return Err(format!(
            "built against {WIT_PACKAGE}@{found}; this host supports {}",
            SUPPORTED_WIT_VERSIONS
                .iter()
                .map(|v| format!("{WIT_PACKAGE}@{v}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    };
    let suffix = format!("@{found}");
    if let Some(name) = imports.iter().find(|n| !n.ends_with(&suffix)) {
        return Err(format!(
            "imports `{name}` but exports `{WIT_PACKAGE}/tool{suffix}`: a plugin is built \
             against one version of {WIT_PACKAGE}"
        ));
    }
    Ok(version)
}

/// Largest manifest (`<tool>.toml`) read.
pub(in crate::plugins) const MAX_MANIFEST_BYTES: u64 = 64 * 1024;
/// Largest signature (`.minisig`) read.
pub(in crate::plugins) const MAX_SIGNATURE_BYTES: u64 = 16 * 1024;

/// Why a plugin file was not read.
#[derive(Debug)]
pub(in crate::plugins) struct ReadError {
    /// The file does not exist.
    pub not_found: bool,
    message: String,
}

impl ReadError {
    /// The file does not exist.
    pub fn not_found() -> ReadError {
        ReadError {
            not_found: true,
            message: "cannot read: No such file or directory".into(),
        }
    }

    /// `path` holds `size` bytes or more, over `cap`.
    pub fn too_large(path: &Path, cap: u64, size: u64) -> ReadError {
        ReadError {
            not_found: false,
            message: format!(
                "the file is {size} bytes or more; a plugin's {} may have at most {cap}",
                path.extension()
                    .map(|e| format!(".{} file", e.to_string_lossy()))
                    .unwrap_or_else(|| "file".into())
            ),
        }
    }
}

impl From<ReadError> for String {
    fn from(e: ReadError) -> String {
        e.message
    }
}

/// Reads `path` whole, once; a file larger than `cap` bytes is refused unread when the file
/// system says its size, and after `cap + 1` bytes otherwise (a FIFO).
pub(in crate::plugins) fn read_capped(path: &Path, cap: u64) -> Result<Vec<u8>, ReadError> {
    let fail = |e: std::io::Error| ReadError {
        not_found: e.kind() == std::io::ErrorKind::NotFound,
        message: format!("cannot read: {e}"),
    };
    let too_large = |size: u64| ReadError::too_large(path, cap, size);
    let file = std::fs::File::open(path).map_err(fail)?;
    let size = file.metadata().map_err(fail)?.len();
    if size > cap {
        return Err(too_large(size));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(cap + 1).read_to_end(&mut bytes).map_err(fail)?;
    if bytes.len() as u64 > cap {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::{tool_version, WitVersion};

    fn names(version: &str, interfaces: &[&str]) -> Vec<String> {
        interfaces
            .iter()
            .map(|i| format!("loan:reporting/{i}@{version}"))
            .collect()
    }

    #[test]
    fn both_served_versions_are_told_apart_and_one_plugin_uses_one() {
        // Arrange
        let imports = ["caller", "clock", "log", "data"];

        // Act + Assert
        for v in WitVersion::ALL {
            let text = v.as_str();
            assert_eq!(
                tool_version(&names(text, &["tool"]), &names(text, &imports)),
                Ok(v)
            );
        }
        let mixed = tool_version(&names("1.1.0", &["tool"]), &names("1.0.0", &imports));
        assert!(
            mixed
                .as_ref()
                .unwrap_err()
                .contains("built against one version"),
            "{mixed:?}"
        );
        let future = tool_version(&names("1.3.0", &["tool"]), &names("1.3.0", &imports));
        assert_eq!(
            future,
            Err("built against loan:reporting@1.3.0; this host supports loan:reporting@1.0.0, loan:reporting@1.1.0, loan:reporting@1.2.0".into())
        );
    }
}
