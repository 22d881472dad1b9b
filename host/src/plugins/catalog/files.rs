//! The files of one plugin, where the loader reads them: a folder's, or bytes held in memory
//! (a registry artifact, loaded from the very bytes its pull or cache read verified).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::checks::{read_capped, ReadError};

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
    /// The files' bytes when they are held in memory (a registry artifact, loaded from the
    /// very bytes its pull or cache read verified): then nothing is read from disk.
    in_memory: Option<InMemory>,
}

/// Plugin files held in memory, by path.
#[derive(Clone, PartialEq, Eq)]
struct InMemory(Arc<Vec<(PathBuf, Vec<u8>)>>);

impl std::fmt::Debug for InMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InMemory({} files)", self.0.len())
    }
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
            in_memory: None,
        }
    }

    /// The files of tool `stem` as if in `dir`, their bytes given by file name: a file not
    /// given does not exist.
    pub fn in_memory(dir: &Path, stem: &str, files: Vec<(String, Vec<u8>)>) -> PluginFiles {
        let mut out = PluginFiles::in_dir(dir, stem);
        out.in_memory = Some(InMemory(Arc::new(
            files
                .into_iter()
                .map(|(name, bytes)| (dir.join(name), bytes))
                .collect(),
        )));
        out
    }

    /// The bytes of `path` (one of these files), at most `cap`: from memory when the files
    /// are held there, else read once from disk.
    pub(in crate::plugins) fn read(&self, path: &Path, cap: u64) -> Result<Vec<u8>, ReadError> {
        let Some(InMemory(files)) = &self.in_memory else {
            return read_capped(path, cap);
        };
        match files.iter().find(|(p, _)| p == path) {
            None => Err(ReadError::not_found()),
            Some((_, bytes)) if bytes.len() as u64 > cap => {
                Err(ReadError::too_large(path, cap, bytes.len() as u64))
            }
            Some((_, bytes)) => Ok(bytes.clone()),
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
            in_memory: None,
        }
    }
}
