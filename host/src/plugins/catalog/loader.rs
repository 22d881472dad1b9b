//! Loading a plugin from its files exactly as the server does: manifest, signature, WIT
//! version and imports, compilation (cached), pre-instantiation and `describe`.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::checks::{
    check_interfaces, check_shape, tool_version, MAX_MANIFEST_BYTES, MAX_SIGNATURE_BYTES,
};
use super::manifest::Manifest;
use super::shape::Shape;
use super::signature::{trusted_comment, ManifestBinding, SignaturePolicy};
use super::view::{self, View};
use crate::plugins::limits::MAX_VIEW_BYTES;
use crate::plugins::sandbox::bindings::ToolPre;
use crate::plugins::sandbox::compiler::MAX_COMPONENT_BYTES;
use crate::plugins::sandbox::invoke::{Answer, Op, Runner};
use crate::plugins::sandbox::memories::Memories;
use crate::plugins::sandbox::spare::SpareSlot;

pub use super::files::PluginFiles;
use crate::plugins::wit::WitVersion;
use crate::plugins::wit::WIT_PACKAGE;

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
    pub wit_version: WitVersion,
    /// What the component creates when instantiated (checked against the manifest at load).
    pub shape: Shape,
    /// The view it ships (`<tool>.html`), when its manifest declares one.
    pub view: Option<View>,
    /// Whether a trusted key signed it.
    pub signed: bool,
    /// The id of the trusted key that signed it (as `minisign` prints it).
    pub signer: Option<String>,
    /// Where the served version came from; set when it is installed.
    pub origin: Option<Origin>,
    pub(crate) pre: ToolPre,
    /// Where this build's instances made ahead of their calls wait (an interpreter's).
    pub(crate) spare: SpareSlot,
}

/// Where a served plugin came from, as the `loanhost_plugin_served` metric and the audit line
/// name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// `folder`, or the registry reference it follows.
    pub source: String,
    /// The digest installed: the artifact's manifest digest for a registry reference, the
    /// component's for the folder (`sha256:…`).
    pub digest: String,
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
    // Each file is read once, and refused unread when it is larger than a plugin's file may
    // be (a component's compilation is bounded, but reading it is not free either).
    let manifest_text = files
        .read(&files.manifest, MAX_MANIFEST_BYTES)
        .map_err(|e| LoadError::new(&files.manifest, e))?;
    let wasm = files
        .read(&files.wasm, MAX_COMPONENT_BYTES)
        .map_err(|e| LoadError::new(&files.wasm, e))?;
    let digest = hex::encode(Sha256::digest(&wasm));
    // Signatures first: nothing of an untrusted plugin is parsed beyond what is needed.
    let Signatures {
        signed,
        signer,
        view_bytes,
    } = signatures(policy, files, &wasm, &manifest_text, &digest)?;
    let (manifest, view) = manifest_and_view(files, manifest_text, view_bytes)?;
    check_component_header(files, &wasm)?;

    // The component's shape before compiling it: a component that imports anything but the
    // host's interfaces, exports no tool of a version this host serves, or is bigger than its
    // manifest allows, costs no compilation.
    let shape = Shape::of(&wasm)
        .map_err(|e| LoadError::new(&files.wasm, format!("not a valid component: {e}")))?;
    check_shape(&shape, &manifest).map_err(|reason| LoadError::new(&files.wasm, reason))?;
    let exported = tool_version(&shape.exports, &shape.imports)
        .map_err(|reason| LoadError::new(&files.wasm, reason))?;
    if exported.as_str() != manifest.wit_version {
        return Err(wit_mismatch(
            &files.manifest,
            &manifest.wit_version,
            exported,
        ));
    }

    // A language runtime's snapshot runs with guard pages, a compiled plugin bounds-checked.
    let memories = Memories::of_image(shape.image_memory);
    let engine = runner.engine.clone();
    let component = tokio::task::spawn_blocking(move || engine.compile(wasm, memories))
        .await
        .map_err(|e| LoadError::new(&files.wasm, format!("compilation aborted: {e}")))?
        .map_err(|e| {
            LoadError::new(
                &files.wasm,
                format!("not a valid component: {}", first_line(&e)),
            )
        })?;

    let engine = &runner.engine;
    let wit_version = check_interfaces(component.engine(), &component)
        .map_err(|reason| LoadError::new(&files.wasm, reason))?;
    if wit_version.as_str() != manifest.wit_version {
        return Err(wit_mismatch(
            &files.manifest,
            &manifest.wit_version,
            wit_version,
        ));
    }

    let instance_pre = engine
        .linker(memories, wit_version)
        .instantiate_pre(&component)
        .map_err(|e| LoadError::new(&files.wasm, format!("cannot link: {}", first_line(&e))))?;
    let pre = ToolPre::new(wit_version, instance_pre).map_err(|e| {
        LoadError::new(
            &files.wasm,
            format!("does not export the tool interface: {}", first_line(&e)),
        )
    })?;

    let manifest = Arc::new(manifest);
    let tool = describe(runner, &pre, &manifest, shape.image_memory, files).await?;

    Ok(Plugin {
        manifest,
        tool,
        digest,
        wit_version,
        shape,
        view,
        signed,
        signer,
        origin: None,
        pre,
        spare: SpareSlot::default(),
    })
}

/// A file's name, for a message.
fn name_of(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// What the signatures established: whether the plugin is signed (component, manifest and
/// view alike), by which key, and the view's bytes as read for its signature.
struct Signatures {
    signed: bool,
    signer: Option<String>,
    view_bytes: Option<Vec<u8>>,
}

/// Checks the component's, the manifest's and the view's signatures: all or none, and a
/// signed manifest bound to the very component and view beside it.
fn signatures(
    policy: &SignaturePolicy,
    files: &PluginFiles,
    wasm: &[u8],
    manifest_text: &[u8],
    digest: &str,
) -> Result<Signatures, LoadError> {
    let signer = check_signature(policy, files, wasm, &files.signature)?.map(|(id, _)| id);
    let signed_wasm = signer.is_some();
    let manifest_signed_by =
        check_signature(policy, files, manifest_text, &files.manifest_signature)?;
    let signed_manifest = manifest_signed_by.is_some();
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
    // One byte over the cap is read, for the view's own message (`view::prepare`).
    let view_bytes = match files.read(&files.view, MAX_VIEW_BYTES + 1) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.not_found => None,
        Err(e) => return Err(LoadError::new(&files.view, e)),
    };
    if let Some(bytes) = &view_bytes {
        let signed_view = check_signature(policy, files, bytes, &files.view_signature)?.is_some();
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
    if let (true, Some((_, comment))) = (signed, &manifest_signed_by) {
        check_binding(files, comment, digest, view_bytes.as_deref())?;
    }
    Ok(Signatures {
        signed,
        signer: signer.filter(|_| signed),
        view_bytes,
    })
}

/// The signed manifest names the component and the view it was signed with (its trusted
/// `comment`), so signed files of different builds or tools cannot be put together.
fn check_binding(
    files: &PluginFiles,
    comment: &str,
    digest: &str,
    view_bytes: Option<&[u8]>,
) -> Result<(), LoadError> {
    let bound = ManifestBinding::parse(comment);
    if bound.component.as_deref() != Some(digest) {
        return Err(LoadError::new(
            &files.manifest,
            format!(
                "its signature names {} but the component beside it is sha256:{}: sign the \
                 manifest with `loanhost plugin sign` beside the build it belongs to",
                bound
                    .component
                    .map_or("no component".into(), |d| format!("component sha256:{d}")),
                digest
            ),
        ));
    }
    let view_digest = view_bytes.map(|b| hex::encode(Sha256::digest(b)));
    if bound.view != view_digest {
        return Err(LoadError::new(
            &files.manifest,
            format!(
                "its signature names {} but {}: sign the manifest with `loanhost plugin \
                 sign` beside the view it belongs to",
                bound
                    .view
                    .map_or("no view".into(), |d| format!("view sha256:{d}")),
                view_digest.map_or("there is no view".into(), |d| format!(
                    "the view beside it is sha256:{d}"
                ))
            ),
        ));
    }
    Ok(())
}

/// The manifest parsed from the very bytes whose signature was checked (not the file again),
/// and the view it declares prepared from its bytes: a view declared must be there, and one
/// there must be declared.
fn manifest_and_view(
    files: &PluginFiles,
    manifest_text: Vec<u8>,
    view_bytes: Option<Vec<u8>>,
) -> Result<(Manifest, Option<View>), LoadError> {
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
    Ok((manifest, view))
}

/// The file is a WebAssembly component (its magic and version bytes), not a core module.
fn check_component_header(files: &PluginFiles, wasm: &[u8]) -> Result<(), LoadError> {
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
            "a core WebAssembly module, not a component (build with wasm-component-ld; see docs/plugins.md)",
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
    Ok(())
}

/// The tool as the plugin describes itself, under the name its manifest gives.
async fn describe(
    runner: &Runner,
    pre: &ToolPre,
    manifest: &Arc<Manifest>,
    image_memory: u64,
    files: &PluginFiles,
) -> Result<ToolInfo, LoadError> {
    let description = match runner
        .run(pre, manifest, image_memory, None, Op::Describe)
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

    Ok(ToolInfo {
        name: description.name,
        title: description.title,
        description: description.description,
        input_schema,
        output_schema,
    })
}

/// The refusal of a manifest whose `wit_version` is not the component's.
fn wit_mismatch(manifest_file: &Path, manifest: &str, component: WitVersion) -> LoadError {
    LoadError::new(
        manifest_file,
        format!(
            "wit_version: the manifest says {manifest} but the component was built against {WIT_PACKAGE}@{component}"
        ),
    )
}

/// Checks one file's `.minisig` (absent or present) under the policy; the trusted key's id and
/// the signature's trusted comment when one signed it.
fn check_signature(
    policy: &SignaturePolicy,
    files: &PluginFiles,
    bytes: &[u8],
    signature: &Path,
) -> Result<Option<(String, String)>, LoadError> {
    let text = match files.read(signature, MAX_SIGNATURE_BYTES) {
        Ok(bytes) => Some(
            String::from_utf8(bytes)
                .map_err(|_| LoadError::new(signature, "cannot read: not UTF-8 text"))?,
        ),
        Err(e) if e.not_found => None,
        Err(e) => return Err(LoadError::new(signature, e)),
    };
    let name = signature
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let target = signature.with_extension("");
    let signer = policy
        .signer(bytes, &name, text.as_deref())
        .map_err(|e| LoadError::new(&target, e.to_string()))?;
    Ok(signer.map(|id| (id, trusted_comment(text.as_deref().unwrap_or("")))))
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
