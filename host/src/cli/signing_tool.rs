//! Keys and signatures for plugin teams (`loanhost plugin keygen`, `loanhost plugin sign`),
//! in minisign's own formats, so `minisign` itself can verify or make them too.

use std::path::{Path, PathBuf};

use minisign::{KeyPair, SecretKeyBox};

/// Writes a new key pair as `<dir>/loanhost.pub` and `<dir>/loanhost.key` (0600, no password;
/// keep it out of the repository). Returns the public key as the one line that
/// `LOANHOST_TRUSTED_KEYS` takes.
pub fn keygen(dir: &Path) -> Result<String, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let (public, secret) = (dir.join("loanhost.pub"), dir.join("loanhost.key"));
    for p in [&public, &secret] {
        if p.exists() {
            return Err(format!("{} already exists", p.display()));
        }
    }
    // An empty password: the checksummed, unencrypted form `minisign -W` also writes.
    let kp = KeyPair::generate_encrypted_keypair(Some(String::new())).map_err(|e| e.to_string())?;
    let pk_box = kp.pk.to_box().map_err(|e| e.to_string())?;
    let sk_box = kp.sk.to_box(None).map_err(|e| e.to_string())?;
    std::fs::write(&public, pk_box.into_string())
        .map_err(|e| format!("{}: {e}", public.display()))?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    use std::io::Write as _;
    options
        .open(&secret)
        .and_then(|mut f| f.write_all(sk_box.into_string().as_bytes()))
        .map_err(|e| format!("{}: {e}", secret.display()))?;
    Ok(kp.pk.to_base64())
}

/// The files to sign for `files`: each given, and the view (`<tool>.html`) beside a component
/// or manifest given, when there is one and it is not given already, so that a release is
/// signed whole (a host that checks signatures refuses a plugin whose view is not signed).
pub fn release_files(files: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = files.to_vec();
    for f in files {
        let plugin_file = f.extension().is_some_and(|e| e == "wasm" || e == "toml");
        let view = f.with_extension("html");
        if plugin_file && view.is_file() && !out.contains(&view) {
            out.push(view);
        }
    }
    out
}

/// Signs `file` with the secret key at `key` into `<file>.minisig`; returns that path. A
/// manifest (`<tool>.toml`) is signed with a trusted comment naming the SHA-256 of the
/// component (`<tool>.wasm`, which must sit beside it) and of the view (`<tool>.html`, when
/// there is one): the host then loads it only beside those very files.
pub fn sign(file: &Path, key: &Path) -> Result<PathBuf, String> {
    let text = std::fs::read_to_string(key).map_err(|e| format!("{}: {e}", key.display()))?;
    let sk = SecretKeyBox::from_string(&text)
        .and_then(|b| b.into_secret_key(Some(String::new())))
        .map_err(|e| {
            format!(
                "{}: not an unencrypted minisign secret key: {e}",
                key.display()
            )
        })?;
    let data = std::fs::File::open(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let name = file
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("plugin");
    let comment = if file.extension().is_some_and(|e| e == "toml") {
        manifest_comment(file)?
    } else {
        format!("file:{name}")
    };
    let signature =
        minisign::sign(None, &sk, data, Some(&comment), None).map_err(|e| e.to_string())?;
    let out = PathBuf::from(format!("{}.minisig", file.display()));
    std::fs::write(&out, signature.into_string()).map_err(|e| format!("{}: {e}", out.display()))?;
    Ok(out)
}

/// The trusted comment of manifest `file`'s signature: the digests of the files beside it.
fn manifest_comment(file: &Path) -> Result<String, String> {
    let beside = |ext: &str| file.with_extension(ext);
    let read = |p: &Path| -> Result<Option<Vec<u8>>, String> {
        match std::fs::read(p) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", p.display())),
        }
    };
    let component = read(&beside("wasm"))?.ok_or_else(|| {
        format!(
            "{}: a manifest is signed beside its component ({} is missing): the signature \
             names the component's digest",
            file.display(),
            beside("wasm").display()
        )
    })?;
    let view = read(&beside("html"))?;
    Ok(loanhost::plugins::ManifestBinding::of(&component, view.as_deref()).comment())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_signed_file_verifies_under_the_policy() {
        let dir = tempfile::tempdir().unwrap();
        let public = super::keygen(dir.path()).unwrap();
        let file = dir.path().join("x.wasm");
        std::fs::write(&file, b"bytes").unwrap();
        let sig = super::sign(&file, &dir.path().join("loanhost.key")).unwrap();
        let policy = loanhost::plugins::SignaturePolicy::new(true, &[public]).unwrap();
        let text = std::fs::read_to_string(sig).unwrap();
        assert_eq!(
            policy.check(b"bytes", "x.wasm.minisig", Some(&text)),
            Ok(true)
        );
        assert!(super::keygen(dir.path())
            .unwrap_err()
            .ends_with("already exists"));
    }

    #[test]
    fn signing_a_plugin_signs_the_view_beside_it_once() {
        // Arrange
        let dir = tempfile::tempdir().unwrap();
        let (wasm, toml, html) = (
            dir.path().join("t.wasm"),
            dir.path().join("t.toml"),
            dir.path().join("t.html"),
        );
        for f in [&wasm, &toml] {
            std::fs::write(f, b"x").unwrap();
        }
        let given = vec![wasm.clone(), toml.clone()];

        // Act / Assert
        assert_eq!(super::release_files(&given), given);
        std::fs::write(&html, b"view").unwrap();
        assert_eq!(
            super::release_files(&given),
            vec![wasm.clone(), toml.clone(), html.clone()]
        );
        let with_view = vec![wasm.clone(), html.clone(), toml.clone()];
        assert_eq!(super::release_files(&with_view), with_view);
    }

    #[test]
    fn a_manifests_signature_names_the_component_and_the_view_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        super::keygen(dir.path()).unwrap();
        let key = dir.path().join("loanhost.key");
        let manifest = dir.path().join("t.toml");
        std::fs::write(&manifest, b"name = \"t\"").unwrap();
        assert!(super::sign(&manifest, &key)
            .unwrap_err()
            .contains("signed beside its component"));
        std::fs::write(dir.path().join("t.wasm"), b"component").unwrap();
        std::fs::write(dir.path().join("t.html"), b"view").unwrap();
        let sig = super::sign(&manifest, &key).unwrap();
        let comment = loanhost::plugins::catalog::signature::trusted_comment(
            &std::fs::read_to_string(sig).unwrap(),
        );
        let bound = loanhost::plugins::catalog::signature::ManifestBinding::parse(&comment);
        use sha2::{Digest as _, Sha256};
        assert_eq!(
            bound.component,
            Some(hex::encode(Sha256::digest(b"component")))
        );
        assert_eq!(bound.view, Some(hex::encode(Sha256::digest(b"view"))));
    }
}
