//! Calling a plugin from its own crate's `cargo test`s, the way the server would: the crate is
//! built to a component (this checkout's `scripts/build-plugin.sh`, once per test run), then
//! `loanhost plugin run` makes one call on a folder of JSON Lines fixtures, as the agent with
//! the given email, with the server's scope and limits. Native targets only.
//!
//! ```ignore
//! #[test]
//! fn counts_my_loans() {
//!     let r = loanhost_guest::testing::call_on_fixtures(
//!         env!("CARGO_MANIFEST_DIR"), "ada@example.com", "tests/fixtures", serde_json::json!({}),
//!     )
//!     .unwrap();
//!     assert_eq!(r["buckets"][0]["count"], 2);
//! }
//! ```
//!
//! The `loanhost` binary is the first found of: `$LOANHOST`, `loanhost` on `PATH`,
//! `~/.cache/loanhost/target/release/loanhost`, `…/debug/loanhost` (`make build` makes it).
//! The component is built into the crate's target folder (`$CARGO_TARGET_DIR`, else
//! `<crate>/target`), under `loanhost-component/`: reused, never left in the temp folder.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use serde_json::Value;

/// The loanhost checkout this SDK belongs to.
fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn loanhost_binary() -> Result<PathBuf, String> {
    if let Some(explicit) = std::env::var_os("LOANHOST").filter(|v| !v.is_empty()) {
        let explicit = PathBuf::from(explicit);
        return if explicit.is_file() {
            Ok(explicit)
        } else {
            Err(format!("LOANHOST={}: no such file", explicit.display()))
        };
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("loanhost"))
            .find(|p| p.is_file())
    });
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
    let cached = ["release", "debug"]
        .iter()
        .map(|p| home.join(".cache/loanhost/target").join(p).join("loanhost"))
        .find(|p| p.is_file());
    on_path.or(cached).ok_or_else(|| {
        "no `loanhost` binary: set LOANHOST to it, put it on PATH, or run `make build` in the \
         loanhost checkout"
            .into()
    })
}

/// Builds the plugin crate at `crate_dir` once per process; returns its `.wasm` and `.toml`.
fn built(crate_dir: &Path) -> Result<(PathBuf, PathBuf), String> {
    static BUILT: OnceLock<Mutex<Vec<(PathBuf, PathBuf, PathBuf)>>> = OnceLock::new();
    let cache = BUILT.get_or_init(|| Mutex::new(Vec::new()));
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, wasm, toml)) = cache.iter().find(|(c, _, _)| c == crate_dir) {
        return Ok((wasm.clone(), toml.clone()));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate_dir.join("target"));
    let out = target.join("loanhost-component");
    let status = Command::new(checkout().join("scripts/build-plugin.sh"))
        .arg(crate_dir)
        .arg(&out)
        .status()
        .map_err(|e| format!("running scripts/build-plugin.sh: {e}"))?;
    if !status.success() {
        return Err(format!("building {} failed", crate_dir.display()));
    }
    let name = crate_dir
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or("the crate folder has no name")?;
    let (wasm, toml) = (
        out.join(format!("{name}.wasm")),
        out.join(format!("{name}.toml")),
    );
    cache.push((crate_dir.to_path_buf(), wasm.clone(), toml.clone()));
    Ok((wasm, toml))
}

/// One call of the plugin crate at `crate_dir` (pass `env!("CARGO_MANIFEST_DIR")`) as the
/// agent `email` of the fixture folder `fixtures` (relative to the crate), with `arguments`.
/// `Ok` is the tool's structured result; `Err` is the error text a client would see
/// (`invalid_params: …`), or why the call could not be made.
pub fn call_on_fixtures(
    crate_dir: &str,
    email: &str,
    fixtures: &str,
    arguments: Value,
) -> Result<Value, String> {
    let crate_dir = Path::new(crate_dir);
    let (wasm, toml) = built(crate_dir)?;
    let out = Command::new(loanhost_binary()?)
        .args(["plugin", "run"])
        .arg(&wasm)
        .arg(&toml)
        .args(["--as", email, "--data"])
        .arg(crate_dir.join(fixtures))
        .args(["--args", &arguments.to_string()])
        .env("RUST_LOG", "warn")
        .output()
        .map_err(|e| format!("running loanhost plugin run: {e}"))?;
    if out.status.success() {
        serde_json::from_slice(&out.stdout).map_err(|e| format!("plugin run printed no JSON: {e}"))
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}
