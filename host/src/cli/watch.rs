//! `loanhost plugin watch`: rebuild a plugin (Rust, Python or TypeScript) when its sources change and deploy the
//! component, manifest and view into a plugin directory, each through a temporary name and a
//! rename (signatures, then view, manifest and component), so a running server's reloader only ever sees
//! whole files. With a signing key, every build is signed before it is deployed; without one,
//! signatures left from an earlier deploy are removed (a stale `.minisig` beside a new build
//! would be refused as tampered), and the tool says so.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How often the sources are looked at.
const POLL: Duration = Duration::from_millis(300);

/// The newest modification time of a plugin's sources: everything under `src/` (Rust,
/// TypeScript) and `view/` (its MCP Apps view), the `*.py` files beside the manifest (Python), `Cargo.toml`, `tsconfig.json`
/// and the manifest.
fn newest(krate: &Path) -> Option<SystemTime> {
    fn walk(dir: &Path, best: &mut Option<SystemTime>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, best);
            } else if let Ok(t) = e.metadata().and_then(|m| m.modified()) {
                *best = (*best).max(Some(t));
            }
        }
    }
    let mut best = None;
    walk(&krate.join("src"), &mut best);
    walk(&krate.join("view"), &mut best);
    let name = krate.file_name()?.to_str()?;
    // The sources of a Python plugin sit beside its manifest.
    let python = std::fs::read_dir(krate)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "py"));
    let files = [
        krate.join("Cargo.toml"),
        krate.join("tsconfig.json"),
        krate.join(format!("{name}.toml")),
    ];
    for f in files.into_iter().chain(python) {
        if let Ok(t) = std::fs::metadata(&f).and_then(|m| m.modified()) {
            best = best.max(Some(t));
        }
    }
    best
}

/// Builds once with `script` (`scripts/build-plugin.sh`), signs with `sign_key` when given,
/// and deploys into `deploy`. Returns what it did with signatures, for the log.
async fn build_and_deploy(
    krate: &Path,
    deploy: &Path,
    script: &Path,
    sign_key: Option<&Path>,
) -> Result<&'static str, String> {
    let name = krate
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| format!("{}: not a crate folder", krate.display()))?
        .to_string();
    let out = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (script_path, krate_path, out_path) = (
        script.to_path_buf(),
        krate.to_path_buf(),
        out.path().to_path_buf(),
    );
    let status = tokio::task::spawn_blocking(move || {
        std::process::Command::new(&script_path)
            .arg(&krate_path)
            .arg(&out_path)
            .stdout(std::process::Stdio::null())
            .status()
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| format!("{}: {e}", script.display()))?;
    if !status.success() {
        return Err(format!(
            "building {name} failed (see above); the deployed version stays"
        ));
    }
    // The view, when the build made one, goes first (before the manifest that declares it).
    let exts: &[&str] = if out.path().join(format!("{name}.html")).exists() {
        &["html", "toml", "wasm"]
    } else {
        &["toml", "wasm"]
    };
    let signatures = [
        format!("{name}.html.minisig"),
        format!("{name}.toml.minisig"),
        format!("{name}.wasm.minisig"),
    ];
    let signed = match sign_key {
        Some(key) => {
            for ext in exts {
                super::signing_tool::sign(&out.path().join(format!("{name}.{ext}")), key)?;
            }
            "signed"
        }
        None => {
            let mut removed = false;
            for s in &signatures {
                match std::fs::remove_file(deploy.join(s)) {
                    Ok(()) => removed = true,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(format!("{s}: {e}")),
                }
            }
            if removed {
                "unsigned: the earlier build's signatures were removed (pass --sign-key to sign each build)"
            } else {
                "unsigned"
            }
        }
    };
    if exts.len() == 2 {
        // No view any more: one left from an earlier deploy would be refused as undeclared.
        for stale in [format!("{name}.html"), format!("{name}.html.minisig")] {
            match std::fs::remove_file(deploy.join(&stale)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(format!("{stale}: {e}")),
            }
        }
    }
    let files = signatures
        .iter()
        .filter(|s| {
            sign_key.is_some() && exts.iter().any(|e| s.ends_with(&format!(".{e}.minisig")))
        })
        .cloned()
        .chain(exts.iter().map(|ext| format!("{name}.{ext}")));
    for file in files {
        let tmp: PathBuf = deploy.join(format!(".{file}.tmp"));
        std::fs::copy(out.path().join(&file), &tmp)
            .map_err(|e| format!("{}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, deploy.join(&file)).map_err(|e| format!("{file}: {e}"))?;
    }
    Ok(signed)
}

/// What a plugin team should know about the key builds are signed with: a server loads them as
/// signed only when its `LOANHOST_TRUSTED_KEYS` lists the key (`trusted`: that setting here, if
/// set), else as unsigned, or not at all when it requires signatures. `None` when it is listed.
fn trust_warning(secret: &Path, trusted: Option<String>) -> Option<String> {
    let public = std::fs::read_to_string(secret.with_extension("pub"))
        .ok()
        .and_then(|t| t.lines().last().map(|l| l.trim().to_string()))
        .filter(|l| !l.is_empty());
    let Some(public) = public else {
        return Some(format!(
            "builds are signed with {}; a server loads them as signed only when its \
             LOANHOST_TRUSTED_KEYS lists that key's public key",
            secret.display()
        ));
    };
    match trusted {
        Some(keys) if keys.split(',').any(|k| k.trim() == public) => None,
        Some(_) => Some(format!(
            "LOANHOST_TRUSTED_KEYS does not list {public}, the key builds are signed with: a \
             server with that setting loads them as unsigned (or refuses them when it requires \
             signatures)"
        )),
        None => Some(format!(
            "builds are signed with {public}; a server loads them as signed only when its \
             LOANHOST_TRUSTED_KEYS lists it"
        )),
    }
}

/// Watches `krate`, rebuilding (signing with `sign_key` when given) and deploying into
/// `deploy` on every change (and once at the start); stops after `rounds` builds when given.
pub async fn watch(
    krate: &Path,
    deploy: &Path,
    script: &Path,
    sign_key: Option<&Path>,
    rounds: Option<u32>,
) -> Result<(), String> {
    if !deploy.is_dir() {
        return Err(format!("--deploy {}: not a directory", deploy.display()));
    }
    if let Some(key) = sign_key {
        if let Some(warning) = trust_warning(key, std::env::var("LOANHOST_TRUSTED_KEYS").ok()) {
            eprintln!("watch: {warning}");
        }
    }
    let mut built = 0;
    let mut seen = None;
    loop {
        let now = newest(krate);
        if now != seen {
            seen = now;
            match build_and_deploy(krate, deploy, script, sign_key).await {
                Ok(signed) => eprintln!(
                    "watch: deployed {} into {} ({signed})",
                    krate.display(),
                    deploy.display()
                ),
                Err(e) => eprintln!("watch: {e}"),
            }
            built += 1;
            if rounds.is_some_and(|r| built >= r) {
                return Ok(());
            }
        }
        tokio::time::sleep(POLL).await;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_key_the_server_does_not_trust_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let public = super::super::signing_tool::keygen(dir.path()).unwrap();
        let key = dir.path().join("loanhost.key");
        assert_eq!(
            super::trust_warning(&key, Some(format!("x, {public}"))),
            None
        );
        let other = super::trust_warning(&key, Some("someone-else".into())).unwrap();
        assert!(
            other.contains("does not list") && other.contains(&public),
            "{other}"
        );
        assert!(super::trust_warning(&key, None)
            .unwrap()
            .contains("LOANHOST_TRUSTED_KEYS lists it"));
    }
}
