//! A plugin as one OCI artifact: the component as the CNCF Wasm layout's layer (config
//! `application/vnd.wasm.config.v0+json`, layer `application/wasm`), so `wkg`, `oras` and
//! `skopeo` fetch it as it is, then the manifest, the signatures and the view as layers of
//! their own media types. Every layer carries its file name (`org.opencontainers.image.title`);
//! a pull writes only the names a plugin's files may have, each within its size cap and checked
//! against its digest.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use oci_client::client::{Config, ImageLayer};
use oci_client::manifest::{OciImageManifest, OciManifest};

use oci_client::secrets::RegistryAuth;
use oci_client::Reference;

use super::layers::check_layer;
use super::layers::layer_kind;
use super::layers::plugin_layers;
use super::layers::MANIFEST;
use super::layers::MAX_OCI_MANIFEST_BYTES;
use super::layers::TITLE;
use super::layers::WASM_CONFIG;
use super::options::{auth_for, client, parse_reference, OciError, RegistryOptions};
use super::wire::{Operation, Wire};
use crate::plugins::catalog::loader::PluginFiles;
use crate::references::is_tool_name;
use crate::references::{clean, Digest};

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

fn io(path: &Path, e: impl std::fmt::Display) -> OciError {
    OciError::Io {
        path: path.to_path_buf(),
        why: e.to_string(),
    }
}

/// Pushes the plugin `<name>.wasm` with its `<name>.toml` (and, when present beside them,
/// their signatures, the view and its signature) to `reference`; returns the manifest's digest.
/// A release whose files are not all signed is refused: in part always (every host would
/// refuse it), wholly unless `unsigned` says it is meant to be (only hosts that allow unsigned
/// plugins serve it).
pub async fn push(
    wasm: &Path,
    manifest: &Path,
    reference: &str,
    unsigned: bool,
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
    check_signed(&files, unsigned)?;
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
    let wire = Wire::new(options)?;
    let auth = authorized(&wire, reference, &target, Operation::Push, options).await?;
    client(options)?
        .push(&target, &layers, config, &auth, Some(oci_manifest))
        .await
        .map_err(|e| registry_error(reference, e))?;
    let digest = wire
        .resolve(reference, &target, &auth, MAX_OCI_MANIFEST_BYTES)
        .await?;
    Ok(Pushed {
        reference: reference.to_string(),
        digest: digest.to_string(),
        files: files.into_iter().map(|(f, _)| f).collect(),
    })
}

/// Refuses a release some of whose files are signed and some not, and one with no signature
/// at all unless `unsigned`.
fn check_signed(files: &[(String, PathBuf)], unsigned: bool) -> Result<(), OciError> {
    let names: Vec<&str> = files.iter().map(|(f, _)| f.as_str()).collect();
    let content: Vec<&str> = names
        .iter()
        .copied()
        .filter(|f| !f.ends_with(".minisig"))
        .collect();
    let (signed, bare): (Vec<&str>, Vec<&str>) = content
        .iter()
        .partition(|f| names.contains(&format!("{f}.minisig").as_str()));
    let path = &files[0].1;
    match (signed.is_empty(), bare.is_empty()) {
        (false, true) => Ok(()),
        (true, _) if unsigned => Ok(()),
        (true, _) => Err(io(
            path,
            "no file of this release is signed: sign them (`loanhost plugin sign --key \
             loanhost.key <tool>.wasm <tool>.toml`, which signs the view beside them too), or \
             push with --unsigned for hosts that allow unsigned plugins",
        )),
        (false, false) => Err(io(
            path,
            format!(
                "{} signed but {} not: every host that checks signatures would refuse this \
                 release (sign them with the same key)",
                signed.join(", "),
                bare.join(", ")
            ),
        )),
    }
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

/// The digest `reference`'s tag names now (a `HEAD` of its manifest), checked to be a digest.
pub async fn resolve(reference: &str, options: &RegistryOptions) -> Result<Digest, OciError> {
    let target = parse_reference(reference)?;
    let wire = Wire::new(options)?;
    let auth = authorized(&wire, reference, &target, Operation::Pull, options).await?;
    wire.resolve(reference, &target, &auth, MAX_OCI_MANIFEST_BYTES)
        .await
}

/// The credentials for `target`'s registry, exchanged for a token where it asks for one.
async fn authorized(
    wire: &Wire,
    reference: &str,
    target: &Reference,
    operation: Operation,
    options: &RegistryOptions,
) -> Result<RegistryAuth, OciError> {
    let credentials = auth_for(target.resolve_registry(), options)?;
    wire.authorize(reference, target, operation, credentials)
        .await
}

/// What the registry answered to a request about `reference`, cleaned.
fn registry_error(reference: &str, e: oci_client::errors::OciDistributionError) -> OciError {
    OciError::Registry {
        reference: reference.to_string(),
        why: clean(&e.to_string()),
    }
}

/// The Wasm layout's config for a component: what it imports and exports, as the layout's
/// readers expect.
fn wasm_config(reference: &str, component: &[u8], digest: &str) -> Result<Vec<u8>, OciError> {
    let shape =
        crate::plugins::catalog::shape::Shape::of(component).map_err(|e| OciError::Artifact {
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

/// A plugin artifact read from a registry into memory, every byte checked: the manifest
/// against the digest asked for, each layer against its descriptor's size and digest.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The manifest's digest.
    pub digest: Digest,
    /// The tool's name (the component's file stem).
    pub name: String,
    /// The artifact's manifest, as the registry served it.
    pub manifest: Vec<u8>,
    /// The plugin's files, by name, in layer order.
    pub files: Vec<(String, Vec<u8>)>,
}

/// Reads `reference` (pinned to a digest, or a tag) from its registry into memory: the
/// manifest within its cap as it streams, then each layer within its file's cap.
pub async fn fetch(reference: &str, options: &RegistryOptions) -> Result<Fetched, OciError> {
    let source = parse_reference(reference)?;
    let refused = |why: String| OciError::Artifact {
        reference: reference.to_string(),
        why: clean(&why),
    };
    let pinned = source
        .digest()
        .map(Digest::parse)
        .transpose()
        .map_err(refused)?;
    let wire = Wire::new(options)?;
    let auth = authorized(&wire, reference, &source, Operation::Pull, options).await?;
    let (bytes, actual) = wire
        .manifest(reference, &source, &auth, MAX_OCI_MANIFEST_BYTES, MANIFEST)
        .await?;
    if let Some(pinned) = pinned.filter(|p| *p != actual) {
        return Err(refused(format!(
            "the manifest's bytes have the digest {actual}, not {pinned}"
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
    let mut files = Vec::new();
    for (file, descriptor, cap) in &layers {
        let digest = Digest::parse(&descriptor.digest)
            .map_err(|why| refused(format!("layer {file}: {why}")))?;
        let data = wire
            .blob(reference, &source, &auth, digest.as_str(), *cap as usize)
            .await
            .map_err(|e| match e {
                OciError::Artifact { why, .. } => refused(format!("layer {file}: {why}")),
                other => other,
            })?;
        check_layer(file, descriptor, &data).map_err(refused)?;
        files.push((file.clone(), data));
    }
    Ok(Fetched {
        digest: actual,
        name,
        manifest: bytes,
        files,
    })
}

/// Pulls `reference` into `out` (created if needed): the plugin's files under their own names,
/// each checked against its digest and size cap before any is written (a refused artifact
/// leaves no file), each written under a name of its own first and then renamed.
pub async fn pull(
    reference: &str,
    out: &Path,
    options: &RegistryOptions,
) -> Result<Pulled, OciError> {
    let fetched = fetch(reference, options).await?;
    std::fs::create_dir_all(out).map_err(|e| io(out, e))?;
    let mut files = Vec::new();
    for (file, data) in &fetched.files {
        let path = out.join(file);
        super::cache::write_new(&path, data).map_err(|e| io(&path, e))?;
        files.push(path);
    }
    Ok(Pulled {
        digest: fetched.digest.to_string(),
        name: fetched.name,
        files,
        manifest: fetched.manifest,
    })
}
