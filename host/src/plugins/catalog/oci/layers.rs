//! An artifact's layers as the host reads them: the media types, the file each layer names,
//! each within its cap, and a layer's bytes checked against its descriptor.

use oci_client::manifest::OciDescriptor;
use sha2::{Digest as _, Sha256};

use crate::plugins::catalog::checks::{MAX_MANIFEST_BYTES, MAX_SIGNATURE_BYTES};
use crate::plugins::limits::MAX_VIEW_BYTES;
use crate::plugins::sandbox::compiler::MAX_COMPONENT_BYTES;
use crate::references::is_tool_name;

/// The artifact's manifest media type.
pub(super) const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

/// The Wasm layout's config media type.
pub(super) const WASM_CONFIG: &str = "application/vnd.wasm.config.v0+json";

/// The Wasm layout's component layer.
pub(super) const WASM_LAYER: &str = "application/wasm";

/// The plugin manifest's layer.
pub(super) const MANIFEST_LAYER: &str = "application/vnd.loanhost.plugin.manifest.v1+toml";

/// A minisign signature's layer.
pub(super) const SIGNATURE_LAYER: &str = "application/vnd.loanhost.plugin.signature.v1+minisign";

/// The view's layer.
pub(super) const VIEW_LAYER: &str = "application/vnd.loanhost.plugin.view.v1+html";

/// The annotation naming a layer's file.
pub(super) const TITLE: &str = "org.opencontainers.image.title";

/// The largest manifest a pull reads.
pub(super) const MAX_OCI_MANIFEST_BYTES: usize = 256 * 1024;

/// The media type and size cap of a plugin's file named `file` for tool `name`.
pub(super) fn layer_kind(name: &str, file: &str) -> Option<(&'static str, u64)> {
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
