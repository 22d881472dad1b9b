//! A plugin as one OCI artifact: the component as the CNCF Wasm layout's layer (config
//! `application/vnd.wasm.config.v0+json`, layer `application/wasm`), so `wkg`, `oras` and
//! `skopeo` fetch it as it is, then the manifest, the signatures and the view as layers of
//! their own media types. Every layer carries its file name (`org.opencontainers.image.title`);
//! a pull writes only the names a plugin's files may have, each within its size cap and checked
//! against its digest.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use oci_client::client::{Config, ImageLayer};
use oci_client::manifest::{OciDescriptor, OciImageManifest, OciManifest};
use sha2::{Digest, Sha256};

use oci_client::secrets::RegistryAuth;
use oci_client::Reference;

use super::{auth_for, client, parse_reference, OciError, RegistryOptions};
use crate::plugins::checks::{MAX_MANIFEST_BYTES, MAX_SIGNATURE_BYTES};
use crate::plugins::compiler::MAX_COMPONENT_BYTES;
use crate::plugins::loader::PluginFiles;
use crate::plugins::manifest::MAX_VIEW_BYTES;

/// The artifact's manifest media type.
const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// The Wasm layout's config media type.
const WASM_CONFIG: &str = "application/vnd.wasm.config.v0+json";
/// The Wasm layout's component layer.
const WASM_LAYER: &str = "application/wasm";
/// The plugin manifest's layer.
const MANIFEST_LAYER: &str = "application/vnd.loanhost.plugin.manifest.v1+toml";
/// A minisign signature's layer.
const SIGNATURE_LAYER: &str = "application/vnd.loanhost.plugin.signature.v1+minisign";
/// The view's layer.
const VIEW_LAYER: &str = "application/vnd.loanhost.plugin.view.v1+html";
/// The annotation naming a layer's file.
const TITLE: &str = "org.opencontainers.image.title";
/// The largest manifest a pull reads.
const MAX_OCI_MANIFEST_BYTES: usize = 256 * 1024;

/// A pushed artifact.
#[derive(Debug, Clone)]
pub struct Pushed {
    /// The reference pushed to.
    pub reference: String,
    /// The manifest's digest (`sha256:…`): what a host pins.
    pub digest: String,
    /// The files, in layer order.
    pub files: Vec<String>,
}

/// A pulled artifact, written into a folder.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The manifest's digest.
    pub digest: String,
    /// The tool's name (the component's file stem).
    pub name: String,
    /// The files written, in layer order.
    pub files: Vec<PathBuf>,
    /// The artifact's manifest, as the registry served it (its SHA-256 is `digest`).
    pub manifest: Vec<u8>,
}

/// The media type and size cap of a plugin's file named `file` for tool `name`.
fn layer_kind(name: &str, file: &str) -> Option<(&'static str, u64)> {
    let rest = file.strip_prefix(name)?;
    Some(match rest {
        ".wasm" => (WASM_LAYER, MAX_COMPONENT_BYTES),
        ".toml" => (MANIFEST_LAYER, MAX_MANIFEST_BYTES),
        ".html" => (VIEW_LAYER, MAX_VIEW_BYTES),
        ".wasm.minisig" | ".toml.minisig" | ".html.minisig" => {
            (SIGNATURE_LAYER, MAX_SIGNATURE_BYTES)
        }
        _ => return None,
    })
}

/// Whether `name` is a tool name (`snake_case`), so that it can name files.
fn is_tool_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

fn io(path: &Path, e: impl std::fmt::Display) -> OciError {
    OciError::Io {
        path: path.to_path_buf(),
        why: e.to_string(),
    }
}

/// Pushes the plugin `<name>.wasm` with its `<name>.toml` (and, when present beside them,
/// their signatures, the view and its signature) to `reference`; returns the manifest's digest.
pub async fn push(
    wasm: &Path,
    manifest: &Path,
    reference: &str,
    options: &RegistryOptions,
) -> Result<Pushed, OciError> {
    let target = parse_reference(reference)?;
    if target.digest().is_some() {
        return Err(OciError::Reference(format!(
            "{reference} (push to a tag; the digest is what the push prints)"
        )));
    }
    let name = wasm
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|n| is_tool_name(n))
        .ok_or_else(|| io(wasm, "the component must be named <tool>.wasm"))?
        .to_string();
    if manifest.file_name().and_then(|f| f.to_str()) != Some(&format!("{name}.toml")) {
        return Err(io(
            manifest,
            format!("the manifest must be named {name}.toml"),
        ));
    }
    // The files a folder holds beside the component and manifest, named as the loader
    // names them.
    let beside = PluginFiles::explicit(wasm, manifest);
    let mut files: Vec<(String, PathBuf)> = vec![
        (format!("{name}.wasm"), wasm.to_path_buf()),
        (format!("{name}.toml"), manifest.to_path_buf()),
    ];
    for path in [
        beside.signature,
        beside.manifest_signature,
        beside.view,
        beside.view_signature,
    ] {
        if path.is_file() {
            let file = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            files.push((file, path));
        }
    }
    let mut layers = Vec::new();
    for (file, path) in &files {
        let (media_type, cap) = layer_kind(&name, file).expect("a plugin file's name");
        let len = std::fs::metadata(path).map_err(|e| io(path, e))?.len();
        if len > cap {
            return Err(io(
                path,
                format!("{len} bytes, over the {cap} a host accepts"),
            ));
        }
        let data = std::fs::read(path).map_err(|e| io(path, e))?;
        layers.push(ImageLayer::new(
            data,
            media_type.to_string(),
            Some(BTreeMap::from([(TITLE.to_string(), file.clone())])),
        ));
    }
    let config = wasm_config(reference, &layers[0].data, &layers[0].sha256_digest())?;
    let config = Config::new(config, WASM_CONFIG.to_string(), None);
    let mut oci_manifest = OciImageManifest::build(
        &layers,
        &config,
        Some(BTreeMap::from([(TITLE.to_string(), name.clone())])),
    );
    oci_manifest.media_type = Some(MANIFEST.to_string());
    let (registry, auth) = connect(&target, options)?;
    let failed = |e| registry_error(reference, e);
    registry
        .push(&target, &layers, config, &auth, Some(oci_manifest))
        .await
        .map_err(failed)?;
    let digest = registry
        .fetch_manifest_digest(&target, &auth)
        .await
        .map_err(failed)?;
    Ok(Pushed {
        reference: reference.to_string(),
        digest,
        files: files.into_iter().map(|(f, _)| f).collect(),
    })
}

/// `reference` pinned to `digest` (`oci://registry/repository@sha256:…`), whatever tag or
/// digest it named.
pub fn pinned(reference: &str, digest: &str) -> Result<String, OciError> {
    let r = parse_reference(reference)?;
    Ok(format!(
        "oci://{}/{}@{digest}",
        r.registry(),
        r.repository()
    ))
}

/// The digest `reference`'s tag names now (a `HEAD` of its manifest).
pub async fn resolve(reference: &str, options: &RegistryOptions) -> Result<String, OciError> {
    let target = parse_reference(reference)?;
    let (registry, auth) = connect(&target, options)?;
    registry
        .fetch_manifest_digest(&target, &auth)
        .await
        .map_err(|e| registry_error(reference, e))
}

/// A client for `options` and the credentials it has for `target`'s registry.
fn connect(
    target: &Reference,
    options: &RegistryOptions,
) -> Result<(oci_client::Client, RegistryAuth), OciError> {
    Ok((
        client(options)?,
        auth_for(target.resolve_registry(), options)?,
    ))
}

/// What the registry answered to a request about `reference`.
fn registry_error(reference: &str, e: oci_client::errors::OciDistributionError) -> OciError {
    OciError::Registry {
        reference: reference.to_string(),
        why: e.to_string(),
    }
}

/// The Wasm layout's config for a component: what it imports and exports, as the layout's
/// readers expect.
fn wasm_config(reference: &str, component: &[u8], digest: &str) -> Result<Vec<u8>, OciError> {
    let shape = crate::plugins::shape::Shape::of(component).map_err(|e| OciError::Artifact {
        reference: reference.to_string(),
        why: format!("the component cannot be read: {e}"),
    })?;
    let created = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    Ok(serde_json::to_vec(&serde_json::json!({
        "created": created,
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [digest],
        "component": {
            "imports": shape.imports,
            "exports": shape.exports,
            "target": null,
        },
    }))
    .expect("JSON"))
}

/// Pulls `reference` into `out` (created if needed): the plugin's files under their own names,
/// each checked against its digest and size cap before it is written (a refused artifact
/// leaves no file).
pub async fn pull(
    reference: &str,
    out: &Path,
    options: &RegistryOptions,
) -> Result<Pulled, OciError> {
    let source = parse_reference(reference)?;
    let refused = |why: String| OciError::Artifact {
        reference: reference.to_string(),
        why,
    };
    let (registry, auth) = connect(&source, options)?;
    let (bytes, digest) = registry
        .pull_manifest_raw(&source, &auth, &[MANIFEST])
        .await
        .map_err(|e| registry_error(reference, e))?;
    if bytes.len() > MAX_OCI_MANIFEST_BYTES {
        return Err(refused(format!("a manifest of {} bytes", bytes.len())));
    }
    let actual = format!("sha256:{:x}", Sha256::digest(&bytes));
    if actual != digest || source.digest().is_some_and(|d| d != actual) {
        return Err(refused(format!(
            "the manifest's bytes have the digest {actual}, not {}",
            source.digest().unwrap_or(&digest)
        )));
    }
    let manifest = match serde_json::from_slice::<OciManifest>(&bytes) {
        Ok(OciManifest::Image(m)) => m,
        Ok(_) => return Err(refused("an image index, not a plugin's manifest".into())),
        Err(e) => return Err(refused(format!("the manifest does not parse: {e}"))),
    };
    if manifest.config.media_type != WASM_CONFIG {
        return Err(refused(format!(
            "config {}, not a Wasm component artifact ({WASM_CONFIG})",
            manifest.config.media_type
        )));
    }
    let layers = plugin_layers(&manifest.layers).map_err(refused)?;
    let name = layers[0].0.trim_end_matches(".wasm").to_string();
    std::fs::create_dir_all(out).map_err(|e| io(out, e))?;
    let mut blobs = Vec::new();
    for (file, descriptor, cap) in &layers {
        let mut data = Capped {
            bytes: Vec::with_capacity(descriptor.size.max(0) as usize),
            cap: *cap as usize,
        };
        registry
            .pull_blob(&source, descriptor, &mut data)
            .await
            .map_err(|e| refused(format!("layer {file}: {e}")))?;
        check_layer(file, descriptor, &data.bytes).map_err(refused)?;
        blobs.push((file.clone(), data.bytes));
    }
    let mut files = Vec::new();
    for (file, data) in blobs {
        let path = out.join(&file);
        let partial = out.join(format!(".{file}.partial"));
        std::fs::write(&partial, &data).map_err(|e| io(&partial, e))?;
        std::fs::rename(&partial, &path).map_err(|e| io(&path, e))?;
        files.push(path);
    }
    Ok(Pulled {
        digest: actual,
        name,
        files,
        manifest: bytes.to_vec(),
    })
}

/// Whether `bytes` are the layer `descriptor` names for `file`: its size and its digest.
pub(super) fn check_layer(
    file: &str,
    descriptor: &OciDescriptor,
    bytes: &[u8],
) -> Result<(), String> {
    if bytes.len() as i64 != descriptor.size {
        return Err(format!(
            "layer {file}: {} bytes where the manifest says {}",
            bytes.len(),
            descriptor.size
        ));
    }
    let actual = format!("sha256:{:x}", Sha256::digest(bytes));
    if actual != descriptor.digest {
        return Err(format!(
            "layer {file}: its bytes have the digest {actual}, not {}",
            descriptor.digest
        ));
    }
    Ok(())
}

/// The artifact's layers as (file name, descriptor, size cap): the component first, then its
/// manifest, then any of the other files a plugin may have, each once, each of its media type
/// and within its cap.
pub(super) fn plugin_layers(
    layers: &[OciDescriptor],
) -> Result<Vec<(String, &OciDescriptor, u64)>, String> {
    let title = |d: &OciDescriptor| {
        d.annotations
            .as_ref()
            .and_then(|a| a.get(TITLE))
            .cloned()
            .unwrap_or_default()
    };
    let first = layers.first().ok_or("no layers")?;
    let component = title(first);
    let name = component
        .strip_suffix(".wasm")
        .filter(|n| is_tool_name(n) && first.media_type == WASM_LAYER)
        .ok_or_else(|| {
            format!(
                "the first layer is `{component}` ({}), not a component <tool>.wasm ({WASM_LAYER})",
                first.media_type
            )
        })?;
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for d in layers {
        let file = title(d);
        let (media_type, cap) = layer_kind(name, &file)
            .ok_or_else(|| format!("a layer named `{file}`, which is no file of plugin {name}"))?;
        if d.media_type != media_type {
            return Err(format!(
                "layer {file} is {}, not {media_type}",
                d.media_type
            ));
        }
        if d.size < 0 || d.size as u64 > cap {
            return Err(format!(
                "layer {file} is {} bytes, over its cap of {cap}",
                d.size
            ));
        }
        if !seen.insert(file.clone()) {
            return Err(format!("two layers named {file}"));
        }
        out.push((file, d, cap));
    }
    if !seen.contains(&format!("{name}.toml")) {
        return Err(format!("no {name}.toml layer"));
    }
    Ok(out)
}

/// A buffer that refuses to grow past its cap, so a registry that sends more bytes than a
/// layer may hold is cut off as it sends them.
struct Capped {
    bytes: Vec<u8>,
    cap: usize,
}

impl tokio::io::AsyncWrite for Capped {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        if self.bytes.len() + buf.len() > self.cap {
            return std::task::Poll::Ready(Err(std::io::Error::other(format!(
                "more than its cap of {} bytes",
                self.cap
            ))));
        }
        self.bytes.extend_from_slice(buf);
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}
