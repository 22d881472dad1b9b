//! Loading a plugin from its files exactly as the server does: manifest, signature, WIT
//! version and imports, compilation (cached), pre-instantiation and `describe`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use sha2::{Digest, Sha256};
use wasmtime::component::types::ComponentItem;
use wasmtime::component::Component;

use super::bindings::ReportingToolPre;
use super::engine::MAX_MEMORIES_PER_COMPONENT;
use super::invoke::{Answer, Op, Runner};
use super::manifest::{Manifest, DEFAULT_CORE_INSTANCES, MAX_CORE_INSTANCES};
use super::shape::{wasi_hint, Shape};
use super::signature::SignaturePolicy;
use super::state::PluginState;
use super::view::{self, View};

/// The WIT package plugins implement.
pub const WIT_PACKAGE: &str = "loan:reporting";
/// Versions of [`WIT_PACKAGE`] this host provides.
pub const SUPPORTED_WIT_VERSIONS: &[&str] = &["1.0.0"];
/// The interfaces a plugin may import (besides none at all).
const IMPORTABLE: &[&str] = &["types", "caller", "clock", "log", "data"];

/// The files of one deployed plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginFiles {
    /// `<tool>.wasm`.
    pub wasm: PathBuf,
    /// `<tool>.toml`.
    pub manifest: PathBuf,
    /// `<tool>.wasm.minisig` (may not exist).
    pub signature: PathBuf,
    /// `<tool>.toml.minisig`: the manifest's signature (may not exist).
    pub manifest_signature: PathBuf,
    /// `<tool>.html`: the view, when the manifest declares one.
    pub view: PathBuf,
    /// `<tool>.html.minisig`: the view's signature (may not exist).
    pub view_signature: PathBuf,
}

impl PluginFiles {
    /// The files of tool `stem` in `dir`.
    pub fn in_dir(dir: &Path, stem: &str) -> PluginFiles {
        PluginFiles {
            wasm: dir.join(format!("{stem}.wasm")),
            manifest: dir.join(format!("{stem}.toml")),
            signature: dir.join(format!("{stem}.wasm.minisig")),
            manifest_signature: dir.join(format!("{stem}.toml.minisig")),
            view: dir.join(format!("{stem}.html")),
            view_signature: dir.join(format!("{stem}.html.minisig")),
        }
    }

    /// Files given explicitly (`loanhost plugin check`): the signature sits beside the wasm,
    /// the view (`<tool>.html`) beside the manifest.
    pub fn explicit(wasm: &Path, manifest: &Path) -> PluginFiles {
        let beside = |p: &Path| {
            let mut sig = p.as_os_str().to_owned();
            sig.push(".minisig");
            PathBuf::from(sig)
        };
        let view = manifest.with_extension("html");
        PluginFiles {
            wasm: wasm.to_path_buf(),
            manifest: manifest.to_path_buf(),
            signature: beside(wasm),
            manifest_signature: beside(manifest),
            view_signature: beside(&view),
            view,
        }
    }
}

/// The tool as the plugin describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    /// MCP tool name.
    pub name: String,
    /// Human-readable title.
    pub title: String,
    /// What the tool does and when to use it.
    pub description: String,
    /// JSON Schema of the arguments.
    pub input_schema: Value,
    /// JSON Schema of the result.
    pub output_schema: Value,
}

/// A loaded, ready-to-call plugin.
pub struct Plugin {
    /// The validated manifest.
    pub manifest: Arc<Manifest>,
    /// The plugin's self-description.
    pub tool: ToolInfo,
    /// SHA-256 of the `.wasm` bytes (hex).
    pub digest: String,
    /// The WIT version the component was built against.
    pub wit_version: String,
    /// What the component creates when instantiated (checked against the manifest at load).
    pub shape: Shape,
    /// The view it ships (`<tool>.html`), when its manifest declares one.
    pub view: Option<View>,
    /// Whether a trusted key signed it.
    pub signed: bool,
    /// The id of the trusted key that signed it (as `minisign` prints it).
    pub signer: Option<String>,
    pub(crate) pre: ReportingToolPre<PluginState>,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.tool.name)
            .field("digest", &self.digest)
            .field("signed", &self.signed)
            .finish()
    }
}

/// A plugin that was refused: the file and the precise reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {reason}")]
pub struct LoadError {
    /// The file at fault.
    pub file: String,
    /// Why it was refused.
    pub reason: String,
}

impl LoadError {
    fn new(file: &Path, reason: impl Into<String>) -> Self {
        LoadError {
            file: file.display().to_string(),
            reason: reason.into(),
        }
    }
}

/// Loads and checks one plugin.
pub(crate) async fn load(
    runner: &Runner,
    policy: &SignaturePolicy,
    files: &PluginFiles,
) -> Result<Plugin, LoadError> {
    let manifest_text = std::fs::read(&files.manifest)
        .map_err(|e| LoadError::new(&files.manifest, format!("cannot read: {e}")))?;
    let wasm = std::fs::read(&files.wasm)
        .map_err(|e| LoadError::new(&files.wasm, format!("cannot read: {e}")))?;
    // Signatures first: nothing of an untrusted plugin is parsed beyond what is needed.
    let signer = check_signature(policy, &wasm, &files.signature)?;
    let signed_wasm = signer.is_some();
    let signed_manifest =
        check_signature(policy, &manifest_text, &files.manifest_signature)?.is_some();
    let name_of = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    if signed_wasm && !signed_manifest {
        return Err(LoadError::new(
            &files.manifest,
            format!(
                "the component is signed but its manifest is not: a signature must cover the \
                 manifest too (sign it with the same key into {})",
                name_of(&files.manifest_signature)
            ),
        ));
    }
    if signed_manifest && !signed_wasm {
        return Err(LoadError::new(
            &files.wasm,
            format!(
                "the manifest is signed but the component is not (no {})",
                name_of(&files.signature)
            ),
        ));
    }
    let signed = signed_wasm && signed_manifest;
    let view_bytes = match std::fs::read(&files.view) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(LoadError::new(&files.view, format!("cannot read: {e}"))),
    };
    if let Some(bytes) = &view_bytes {
        let signed_view = check_signature(policy, bytes, &files.view_signature)?.is_some();
        if signed && !signed_view {
            return Err(LoadError::new(
                &files.view,
                format!(
                    "the plugin is signed but its view is not: a signature must cover the view \
                     too (sign it with the same key into {})",
                    name_of(&files.view_signature)
                ),
            ));
        }
        if signed_view && !signed {
            return Err(LoadError::new(
                &files.view,
                "the view is signed but the plugin is not",
            ));
        }
    }
    // Parse the very bytes whose signature was checked (not the file again).
    let manifest_text = String::from_utf8(manifest_text)
        .map_err(|_| LoadError::new(&files.manifest, "cannot read: not UTF-8 text"))?;
    let stem = files.manifest.file_stem().and_then(|s| s.to_str());
    let manifest = Manifest::parse(&manifest_text, stem)
        .map_err(|reason| LoadError::new(&files.manifest, reason))?;
    let view = match (&manifest.view, view_bytes) {
        (Some(decl), Some(bytes)) => Some(
            view::prepare(&manifest.name, decl.clone(), &bytes)
                .map_err(|reason| LoadError::new(&files.view, reason))?,
        ),
        (Some(_), None) => {
            return Err(LoadError::new(
                &files.manifest,
                format!(
                    "view: the manifest declares a view but {} is missing",
                    name_of(&files.view)
                ),
            ))
        }
        (None, Some(_)) => {
            return Err(LoadError::new(
                &files.view,
                "a view file is present but the manifest declares no [view]: add a [view] \
                 table to the manifest, or remove the file",
            ))
        }
        (None, None) => None,
    };
    if !wasm.starts_with(b"\0asm") {
        return Err(LoadError::new(
            &files.wasm,
            "not a WebAssembly file (bad magic bytes)",
        ));
    }
    match wasm.get(4..8) {
        Some([0x0d, 0x00, 0x01, 0x00]) => {}
        Some([0x01, 0x00, 0x00, 0x00]) => return Err(LoadError::new(
            &files.wasm,
            "a core WebAssembly module, not a component (build with wasm-component-ld; see README)",
        )),
        other => {
            let found = other
                .unwrap_or(&wasm[4..])
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<Vec<_>>()
                .join(" ");
            return Err(LoadError::new(
                &files.wasm,
                format!(
                    "not a WebAssembly component: version bytes `{found}`, expected `0d 00 01 00`"
                ),
            ));
        }
    }

    // The component's shape before compiling it: a component that imports anything but the
    // host's interfaces, or that is bigger than its manifest allows, costs no compilation.
    let shape = Shape::of(&wasm)
        .map_err(|e| LoadError::new(&files.wasm, format!("not a valid component: {e}")))?;
    check_shape(&shape, &manifest).map_err(|reason| LoadError::new(&files.wasm, reason))?;

    let engine = runner.engine.clone();
    let bytes = wasm.clone();
    let component = tokio::task::spawn_blocking(move || engine.compile(&bytes))
        .await
        .map_err(|e| LoadError::new(&files.wasm, format!("compilation aborted: {e}")))?
        .map_err(|e| {
            LoadError::new(
                &files.wasm,
                format!("not a valid component: {}", first_line(&e)),
            )
        })?;

    let engine = &runner.engine;
    let wit_version = check_interfaces(engine.engine(), &component)
        .map_err(|reason| LoadError::new(&files.wasm, reason))?;
    if wit_version != manifest.wit_version {
        return Err(LoadError::new(
            &files.manifest,
            format!(
                "wit_version: the manifest says {} but the component was built against {WIT_PACKAGE}@{wit_version}",
                manifest.wit_version
            ),
        ));
    }

    let instance_pre = engine
        .linker()
        .instantiate_pre(&component)
        .map_err(|e| LoadError::new(&files.wasm, format!("cannot link: {}", first_line(&e))))?;
    let pre = ReportingToolPre::new(instance_pre).map_err(|e| {
        LoadError::new(
            &files.wasm,
            format!("does not export the tool interface: {}", first_line(&e)),
        )
    })?;

    let manifest = Arc::new(manifest);
    let description = match runner
        .run(&pre, &manifest, shape.image_memory, None, Op::Describe)
        .await
    {
        Ok(Answer::Described(d)) => d,
        Ok(Answer::Called(_)) => unreachable!("describe answers with a description"),
        Err(e) => return Err(LoadError::new(&files.wasm, format!("describe failed: {e}"))),
    };
    if description.name != manifest.name {
        return Err(LoadError::new(
            &files.wasm,
            format!(
                "the plugin describes itself as `{}` but its manifest names `{}`",
                description.name, manifest.name
            ),
        ));
    }
    let input_schema =
        schema(&description.input_schema, "input").map_err(|r| LoadError::new(&files.wasm, r))?;
    let output_schema =
        schema(&description.output_schema, "output").map_err(|r| LoadError::new(&files.wasm, r))?;

    Ok(Plugin {
        manifest,
        tool: ToolInfo {
            name: description.name,
            title: description.title,
            description: description.description,
            input_schema,
            output_schema,
        },
        digest: hex::encode(Sha256::digest(&wasm)),
        wit_version,
        shape,
        view,
        signed,
        signer: signer.filter(|_| signed),
        pre,
    })
}

/// Checks one file's `.minisig` (absent or present) under the policy; the trusted key's id
/// when one signed it.
fn check_signature(
    policy: &SignaturePolicy,
    bytes: &[u8],
    signature: &Path,
) -> Result<Option<String>, LoadError> {
    let text = match std::fs::read_to_string(signature) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(LoadError::new(signature, format!("cannot read: {e}"))),
    };
    let name = signature
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let target = signature.with_extension("");
    policy
        .signer(bytes, &name, text.as_deref())
        .map_err(|e| LoadError::new(&target, e.to_string()))
}

/// Checks what the component's shape says before it is compiled: only the host's imports
/// (naming the build flag that removes WASI), and no more core instances, memories or initial
/// memory than the manifest and the engine allow.
fn check_shape(shape: &Shape, manifest: &Manifest) -> Result<(), String> {
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
    if shape.initial_memory_mib() > u64::from(limits.memory_mib) {
        return Err(format!(
            "the component starts with {} MiB of linear memory, more than its manifest's \
             limits.memory_mib = {} (a Python or JavaScript runtime starts with 10 to 15 MiB: \
             give it at least 32)",
            shape.initial_memory_mib(),
            limits.memory_mib
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
fn is_importable(name: &str) -> bool {
    name.strip_prefix(WIT_PACKAGE)
        .and_then(|rest| rest.strip_prefix('/'))
        .and_then(|rest| rest.split_once('@'))
        .is_some_and(|(interface, _)| IMPORTABLE.contains(&interface))
}

/// Checks every import (first: a component that asks for anything outside `loan:reporting`,
/// WASI included, is refused whatever it exports), then finds the WIT version of the exported
/// tool interface, which every import must share.
fn check_interfaces(engine: &wasmtime::Engine, component: &Component) -> Result<String, String> {
    let ty = component.component_type();
    for (name, _) in ty.imports(engine) {
        if !is_importable(name) {
            return Err(foreign_import(name));
        }
    }
    let export_prefix = format!("{WIT_PACKAGE}/tool@");
    let found = ty
        .exports(engine)
        .find_map(|(name, item)| {
            let version = name.strip_prefix(&export_prefix)?;
            matches!(item.ty, ComponentItem::ComponentInstance(_)).then(|| version.to_string())
        })
        .ok_or_else(|| {
            let names: Vec<String> = ty.exports(engine).map(|(n, _)| n.to_string()).collect();
            format!(
                "does not export `{WIT_PACKAGE}/tool` (exports: {}); is it a loanhost plugin?",
                if names.is_empty() {
                    "none".into()
                } else {
                    names.join(", ")
                }
            )
        })?;
    if !SUPPORTED_WIT_VERSIONS.contains(&found.as_str()) {
        return Err(format!(
            "built against {WIT_PACKAGE}@{found}; this host supports {}",
            SUPPORTED_WIT_VERSIONS
                .iter()
                .map(|v| format!("{WIT_PACKAGE}@{v}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let suffix = format!("@{found}");
    if let Some((name, _)) = ty.imports(engine).find(|(n, _)| !n.ends_with(&suffix)) {
        return Err(format!(
            "imports `{name}` but exports `{WIT_PACKAGE}/tool{suffix}`: a plugin is built \
             against one version of {WIT_PACKAGE}"
        ));
    }
    Ok(found)
}

fn schema(text: &str, which: &str) -> Result<Value, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(format!("the {which} schema is not a JSON object")),
        Err(e) => Err(format!("the {which} schema is not valid JSON: {e}")),
    }
}

fn first_line(e: &wasmtime::Error) -> String {
    format!("{e:#}")
        .lines()
        .next()
        .unwrap_or("unknown error")
        .to_string()
}
