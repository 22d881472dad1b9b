//! The follower's cache of verified artifacts (`LOANHOST_CACHE_DIR/oci/<hex>`): an artifact's
//! files beside its OCI manifest, written once under the manifest's digest and checked against
//! that digest again on every read, so an entry changed on disk is pulled again (or, with no
//! registry, not served) rather than trusted for the folder's name.

use std::path::Path;

use oci_client::manifest::OciImageManifest;
use sha2::{Digest, Sha256};

use super::artifact::{check_layer, plugin_layers};

/// The file holding the artifact's OCI manifest, as the registry served it, in its folder.
pub const MANIFEST_FILE: &str = "oci-manifest.json";

/// Checks that `dir` holds exactly the artifact `digest` names: its manifest's SHA-256 is
/// `digest`, the manifest is a plugin's, every layer's file has the layer's size and digest,
/// and no other file is there.
pub fn verify(dir: &Path, digest: &str) -> Result<(), String> {
    let manifest =
        std::fs::read(dir.join(MANIFEST_FILE)).map_err(|e| format!("{MANIFEST_FILE}: {e}"))?;
    let actual = format!("sha256:{:x}", Sha256::digest(&manifest));
    if actual != digest {
        return Err(format!("{MANIFEST_FILE} has the digest {actual}"));
    }
    let manifest: OciImageManifest = serde_json::from_slice(&manifest)
        .map_err(|e| format!("{MANIFEST_FILE} does not parse: {e}"))?;
    let layers = plugin_layers(&manifest.layers)?;
    let mut expected: Vec<&str> = vec![MANIFEST_FILE];
    for (file, descriptor, _) in &layers {
        let bytes = std::fs::read(dir.join(file)).map_err(|e| format!("{file}: {e}"))?;
        check_layer(file, descriptor, &bytes).map_err(|why| format!("cached {why}"))?;
        expected.push(file);
    }
    let entries = std::fs::read_dir(dir).map_err(|e| e.to_string())?;
    for entry in entries {
        let name = entry.map_err(|e| e.to_string())?.file_name();
        let name = name.to_string_lossy();
        if !expected.contains(&name.as_ref()) {
            return Err(format!("{name} is no file of the artifact"));
        }
    }
    Ok(())
}
