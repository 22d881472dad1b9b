//! Where things are: the repository, the built binary, the test clients and their Python.

use std::path::{Path, PathBuf};

/// The repository's root folder.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The real MCP clients and peers of `tests/clients` (Node; `make test` runs `npm ci` there).
pub fn clients() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("clients")
}

/// The `loanhost` binary of this build (`target/<profile>/loanhost`, beside the test binary's
/// `deps/` folder), when cargo built it.
pub fn loanhost_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let binary = exe.parent()?.parent()?.join("loanhost");
    binary.is_file().then_some(binary)
}

/// The Python with `mcp==2.3.0` (`make test` creates `.venv`; `MCP_TEST_PYTHON` overrides).
pub fn python() -> PathBuf {
    std::env::var_os("MCP_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".venv/bin/python"))
}
