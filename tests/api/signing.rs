//! Signatures and WIT versions: tampered and unsigned plugins refused in required mode; a
//! plugin built against another WIT major version refused with both versions named.

use std::io::Cursor;

use loanhost::clock::Clock;
use loanhost::plugins::{PluginFiles, Plugins, SignaturePolicy};
use serde_json::json;

use crate::helpers::{
    fixture_wasm, manifest, spawn_app_with, tool_manifest, tool_wasm, AppOptions, DEFAULT_ROLES,
};

struct Signer {
    public: String,
    secret: minisign::SecretKey,
}

fn signer() -> Signer {
    let kp = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
    Signer {
        public: kp.pk.to_base64(),
        secret: kp.sk,
    }
}

impl Signer {
    fn sign(&self, bytes: &[u8]) -> String {
        minisign::sign(
            None,
            &self.secret,
            Cursor::new(bytes),
            Some("loanhost test"),
            None,
        )
        .unwrap()
        .to_string()
    }
}

async fn check(dir: &std::path::Path, policy: SignaturePolicy) -> Result<bool, String> {
    let plugins = Plugins::new(None, policy, Clock::system()).unwrap();
    plugins
        .load(&PluginFiles::in_dir(dir, "get_loan_reporting_metadata"))
        .await
        .map(|p| p.signed)
        .map_err(|e| e.to_string())
}

fn deploy(dir: &std::path::Path, wasm: &[u8], sig: Option<&str>) {
    std::fs::write(dir.join("get_loan_reporting_metadata.wasm"), wasm).unwrap();
    std::fs::write(
        dir.join("get_loan_reporting_metadata.toml"),
        tool_manifest("get_loan_reporting_metadata"),
    )
    .unwrap();
    let sig_path = dir.join("get_loan_reporting_metadata.wasm.minisig");
    match sig {
        Some(s) => std::fs::write(sig_path, s).unwrap(),
        None => {
            let _ = std::fs::remove_file(sig_path);
        }
    }
}

#[tokio::test]
async fn required_signatures_accept_signed_and_refuse_unsigned_or_tampered() {
    // Arrange
    let dir = tempfile::tempdir().unwrap();
    let key = signer();
    let other = signer();
    let wasm = tool_wasm("get_loan_reporting_metadata");
    let required = SignaturePolicy::new(true, std::slice::from_ref(&key.public)).unwrap();
    let mut tampered = wasm.clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 0x01;

    // Act + Assert: signed by the trusted key.
    deploy(dir.path(), &wasm, Some(&key.sign(&wasm)));
    assert_eq!(check(dir.path(), required.clone()).await, Ok(true));

    // Unsigned.
    deploy(dir.path(), &wasm, None);
    let e = check(dir.path(), required.clone()).await.unwrap_err();
    assert!(e.ends_with("unsigned: signatures are required (LOANHOST_REQUIRE_SIGNED_PLUGINS=true) and there is no get_loan_reporting_metadata.wasm.minisig"), "{e}");

    // Tampered after signing.
    deploy(dir.path(), &tampered, Some(&key.sign(&wasm)));
    let e = check(dir.path(), required.clone()).await.unwrap_err();
    assert!(
        e.contains("the signature does not verify against any trusted key"),
        "{e}"
    );

    // Signed by an untrusted key.
    deploy(dir.path(), &wasm, Some(&other.sign(&wasm)));
    let e = check(dir.path(), required).await.unwrap_err();
    assert!(e.contains("does not verify against any trusted key"), "{e}");

    // Not required: unsigned loads, but a bad signature is still refused.
    let optional = SignaturePolicy::new(false, std::slice::from_ref(&key.public)).unwrap();
    deploy(dir.path(), &wasm, None);
    assert_eq!(check(dir.path(), optional.clone()).await, Ok(false));
    deploy(dir.path(), &tampered, Some(&key.sign(&wasm)));
    assert!(check(dir.path(), optional).await.is_err());
}

#[tokio::test]
async fn the_server_in_required_mode_lists_only_signed_plugins() {
    // Arrange
    let key = signer();
    let wasm = tool_wasm("get_loan_reporting_metadata");
    let revision = fixture_wasm("revision-a");
    let options = AppOptions::default()
        .plugin(
            "get_loan_reporting_metadata",
            wasm.clone(),
            tool_manifest("get_loan_reporting_metadata"),
        )
        .plugin(
            "revision",
            revision,
            manifest("revision", DEFAULT_ROLES, &[], 16, 1000, 65536),
        );
    let mut options = options;
    options.files.push((
        "get_loan_reporting_metadata.wasm.minisig".into(),
        key.sign(&wasm).into_bytes(),
    ));
    options
        .env
        .push(("LOANHOST_REQUIRE_SIGNED_PLUGINS", "true".into()));
    options
        .env
        .push(("LOANHOST_TRUSTED_KEYS", key.public.clone()));

    // Act
    let app = spawn_app_with(options).await;

    // Assert
    assert_eq!(app.tool_names().await, vec!["get_loan_reporting_metadata"]);
    let r = app
        .call_ok("agent-token", "get_loan_reporting_metadata", json!({}))
        .await;
    assert!(r["statuses"].is_array());
}

#[tokio::test]
async fn another_wit_major_version_is_refused_naming_both_versions() {
    // Arrange
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("future.wasm"), fixture_wasm("future-wit")).unwrap();
    std::fs::write(
        dir.path().join("future.toml"),
        manifest("future", DEFAULT_ROLES, &[], 16, 1000, 1000),
    )
    .unwrap();
    let plugins = Plugins::new(None, SignaturePolicy::default(), Clock::system()).unwrap();

    // Act
    let e = plugins
        .load(&PluginFiles::in_dir(dir.path(), "future"))
        .await
        .unwrap_err();

    // Assert
    assert!(e.to_string().ends_with("future.wasm: built against loan:reporting@2.0.0; this host supports loan:reporting@1.0.0"), "{e}");
}

#[tokio::test]
async fn a_core_module_or_garbage_is_refused_precisely() {
    // Arrange
    let dir = tempfile::tempdir().unwrap();
    let plugins = Plugins::new(None, SignaturePolicy::default(), Clock::system()).unwrap();
    std::fs::write(
        dir.path().join("get_loan_reporting_metadata.toml"),
        tool_manifest("get_loan_reporting_metadata"),
    )
    .unwrap();
    let files = PluginFiles::in_dir(dir.path(), "get_loan_reporting_metadata");

    // Act + Assert
    std::fs::write(&files.wasm, b"hello").unwrap();
    let e = plugins.load(&files).await.unwrap_err().to_string();
    assert!(
        e.ends_with("not a WebAssembly file (bad magic bytes)"),
        "{e}"
    );
    std::fs::write(&files.wasm, b"\0asm\x01\0\0\0").unwrap();
    let e = plugins.load(&files).await.unwrap_err().to_string();
    assert!(
        e.ends_with(
            "a core WebAssembly module, not a component (build with wasm-component-ld; see README)"
        ),
        "{e}"
    );
}
