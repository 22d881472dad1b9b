//! Where things are: the repository, the built binary, the test clients and their Python.

use std::path::PathBuf;

/// The repository's root folder: the parent of the running test's package (cargo sets
/// `CARGO_MANIFEST_DIR` when it runs a test or a bench; every package of the workspace is one
/// folder below the root), else of this crate's as it was built. Read at run time: a target
/// folder shared by two clones of the repository (`~/.cache/loanhost/target`) may hold this
/// crate built in the other clone, whose path would otherwise be baked in.
pub fn root() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.join("Cargo.toml").is_file())
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The real MCP clients and peers of `tests/clients` (Node; `make test` runs `npm ci` there).
pub fn clients() -> PathBuf {
    root().join("tests/clients")
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
