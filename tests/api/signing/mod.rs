//! Signatures and WIT versions: tampered and unsigned plugins refused in required mode; a
//! plugin built against another WIT major version refused with both versions named.

mod components;

use std::io::Cursor;

use loanhost::clock::Clock;
use loanhost::plugins::{ManifestBinding, PluginFiles, Plugins, SignaturePolicy};
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
        self.sign_with(bytes, "loanhost test")
    }

    /// A manifest's signature, naming the component it is deployed with (as `loanhost plugin
    /// sign` writes it).
    fn sign_manifest(&self, manifest: &[u8], wasm: &[u8]) -> String {
        self.sign_with(manifest, &ManifestBinding::of(wasm, None).comment())
    }

    fn sign_with(&self, bytes: &[u8], comment: &str) -> String {
        minisign::sign(None, &self.secret, Cursor::new(bytes), Some(comment), None)
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

/// Deploys the metadata tool with the shipped manifest; `sig` is the `.wasm.minisig` text,
/// and `manifest_signer` signs the manifest into `.toml.minisig` (none: no manifest
/// signature).
fn deploy(dir: &std::path::Path, wasm: &[u8], sig: Option<&str>, manifest_signer: Option<&Signer>) {
    let manifest = tool_manifest("get_loan_reporting_metadata");
    std::fs::write(dir.join("get_loan_reporting_metadata.wasm"), wasm).unwrap();
    std::fs::write(dir.join("get_loan_reporting_metadata.toml"), &manifest).unwrap();
    let put = |name: &str, text: Option<String>| {
        let path = dir.join(name);
        match text {
            Some(s) => std::fs::write(path, s).unwrap(),
            None => {
                let _ = std::fs::remove_file(path);
            }
        }
    };
    put(
        "get_loan_reporting_metadata.wasm.minisig",
        sig.map(str::to_string),
    );
    put(
        "get_loan_reporting_metadata.toml.minisig",
        manifest_signer.map(|k| k.sign_manifest(manifest.as_bytes(), wasm)),
    );
}

/// The refusal of a component whose signature does not verify (in every mode).
const BAD_WASM_SIGNATURE: &str = "get_loan_reporting_metadata.wasm: get_loan_reporting_metadata.wasm.minisig: the signature does not verify against any trusted key (tampered plugin or untrusted signer)";

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
    deploy(dir.path(), &wasm, Some(&key.sign(&wasm)), Some(&key));
    assert_eq!(check(dir.path(), required.clone()).await, Ok(true));

    // Unsigned.
    deploy(dir.path(), &wasm, None, None);
    let e = check(dir.path(), required.clone()).await.unwrap_err();
    assert!(e.ends_with("unsigned: signatures are required (LOANHOST_REQUIRE_SIGNED_PLUGINS=true) and there is no get_loan_reporting_metadata.wasm.minisig"), "{e}");

    // Tampered after signing.
    deploy(dir.path(), &tampered, Some(&key.sign(&wasm)), Some(&key));
    let e = check(dir.path(), required.clone()).await.unwrap_err();
    assert!(e.ends_with(BAD_WASM_SIGNATURE), "{e}");

    // Signed by an untrusted key.
    deploy(dir.path(), &wasm, Some(&other.sign(&wasm)), Some(&other));
    let e = check(dir.path(), required.clone()).await.unwrap_err();
    assert!(e.ends_with(BAD_WASM_SIGNATURE), "{e}");

    // Another build, itself validly signed, beside the signed manifest of this one.
    deploy(dir.path(), &wasm, Some(&key.sign(&wasm)), Some(&key));
    let other_build = fixture_wasm("misbehave");
    std::fs::write(
        dir.path().join("get_loan_reporting_metadata.wasm"),
        &other_build,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("get_loan_reporting_metadata.wasm.minisig"),
        key.sign(&other_build),
    )
    .unwrap();
    let e = check(dir.path(), required).await.unwrap_err();
    assert!(
        e.contains("get_loan_reporting_metadata.toml: its signature names component sha256:"),
        "{e}"
    );

    // Not required: unsigned loads, but a bad signature is still refused.
    let optional = SignaturePolicy::new(false, std::slice::from_ref(&key.public)).unwrap();
    deploy(dir.path(), &wasm, None, None);
    assert_eq!(check(dir.path(), optional.clone()).await, Ok(false));
    deploy(dir.path(), &tampered, Some(&key.sign(&wasm)), Some(&key));
    let e = check(dir.path(), optional).await.unwrap_err();
    assert!(e.ends_with(BAD_WASM_SIGNATURE), "{e}");
}

#[tokio::test]
async fn the_bytes_parsed_are_the_bytes_verified() {
    // Arrange: a signed plugin whose manifest is a FIFO: the first open reads the signed
    // manifest, a second open would read a widened one. A loader that read the file again
    // after checking its signature would parse what nobody signed.
    let dir = tempfile::tempdir().unwrap();
    let key = signer();
    let wasm = tool_wasm("get_loan_reporting_metadata");
    let required = SignaturePolicy::new(true, std::slice::from_ref(&key.public)).unwrap();
    deploy(dir.path(), &wasm, Some(&key.sign(&wasm)), Some(&key));
    let manifest_path = dir.path().join("get_loan_reporting_metadata.toml");
    let signed = std::fs::read_to_string(&manifest_path).unwrap();
    let widened = signed.replace("timeout_ms = 1000", "timeout_ms = 60000");
    assert_ne!(signed, widened);
    std::fs::remove_file(&manifest_path).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&manifest_path)
        .status()
        .unwrap();
    assert!(made.success());
    let fifo = manifest_path.clone();
    // Each open of the FIFO for writing waits for a reader; the second waits for ever when
    // the loader reads once (the thread is left behind, blocked, and ends with the process).
    // Between the two, the first reader has seen its end of file and closed (else the second
    // text would join the first read).
    std::thread::spawn(move || {
        for text in [signed, widened] {
            let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&fifo) else {
                return;
            };
            let _ = std::io::Write::write_all(&mut f, text.as_bytes());
            drop(f);
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
    });

    // Act
    let plugins = Plugins::new(None, required, Clock::system()).unwrap();
    let loaded = plugins
        .load(&PluginFiles::in_dir(
            dir.path(),
            "get_loan_reporting_metadata",
        ))
        .await
        .unwrap();

    // Assert: the limits are the signed ones.
    assert!(loaded.signed);
    assert_eq!(loaded.manifest.limits.timeout_ms, 1000);
}

#[tokio::test]
async fn a_signature_covers_the_manifest_too() {
    // Arrange
    let dir = tempfile::tempdir().unwrap();
    let key = signer();
    let wasm = tool_wasm("get_loan_reporting_metadata");
    let required = SignaturePolicy::new(true, std::slice::from_ref(&key.public)).unwrap();
    let manifest_path = dir.path().join("get_loan_reporting_metadata.toml");

    // Act + Assert: the manifest changed under a valid component signature (a wider
    // deadline and more memory than the signer approved).
    deploy(dir.path(), &wasm, Some(&key.sign(&wasm)), Some(&key));
    assert_eq!(check(dir.path(), required.clone()).await, Ok(true));
    let widened = tool_manifest("get_loan_reporting_metadata")
        .replace("timeout_ms = 1000", "timeout_ms = 60000");
    assert_ne!(widened, tool_manifest("get_loan_reporting_metadata"));
    std::fs::write(&manifest_path, widened).unwrap();
    let e = check(dir.path(), required.clone()).await.unwrap_err();
    assert!(
        e.ends_with("get_loan_reporting_metadata.toml: get_loan_reporting_metadata.toml.minisig: the signature does not verify against any trusted key (tampered plugin or untrusted signer)"),
        "{e}"
    );

    // A signed component whose manifest has no signature at all.
    deploy(dir.path(), &wasm, Some(&key.sign(&wasm)), None);
    let e = check(dir.path(), required).await.unwrap_err();
    assert!(
        e.ends_with("unsigned: signatures are required (LOANHOST_REQUIRE_SIGNED_PLUGINS=true) and there is no get_loan_reporting_metadata.toml.minisig"),
        "{e}"
    );
    let optional = SignaturePolicy::new(false, std::slice::from_ref(&key.public)).unwrap();
    let e = check(dir.path(), optional).await.unwrap_err();
    assert!(
        e.ends_with("the component is signed but its manifest is not: a signature must cover the manifest too (sign it with the same key into get_loan_reporting_metadata.toml.minisig)"),
        "{e}"
    );
}

#[tokio::test]
async fn an_org_wide_manifest_granting_agent_is_refused() {
    // Arrange
    let dir = tempfile::tempdir().unwrap();
    let manifest = tool_manifest("warehouse_loan_milestone_report").replace(
        "roles = [\"Admin\", \"Processor\", \"ConciergeKey\"]",
        "roles = [\"Admin\", \"Agent\"]",
    );
    assert!(manifest.contains("\"Agent\""), "{manifest}");
    std::fs::write(
        dir.path().join("warehouse_loan_milestone_report.wasm"),
        tool_wasm("warehouse_loan_milestone_report"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("warehouse_loan_milestone_report.toml"),
        manifest,
    )
    .unwrap();
    let plugins = Plugins::new(None, SignaturePolicy::default(), Clock::system()).unwrap();

    // Act
    let e = plugins
        .load(&PluginFiles::in_dir(
            dir.path(),
            "warehouse_loan_milestone_report",
        ))
        .await
        .unwrap_err()
        .to_string();

    // Assert
    assert!(
        e.ends_with("warehouse_loan_milestone_report.toml: roles: `Agent` may not call an org-wide plugin; org-wide data is only for Admin, Processor, ConciergeKey"),
        "{e}"
    );
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
    options.files.push((
        "get_loan_reporting_metadata.toml.minisig".into(),
        key.sign_manifest(
            tool_manifest("get_loan_reporting_metadata").as_bytes(),
            &wasm,
        )
        .into_bytes(),
    ));
    options
        .env
        .push(("LOANHOST_REQUIRE_SIGNED_PLUGINS", "true".into()));
    options
        .env
        .push(("LOANHOST_TRUSTED_KEYS", key.public.clone()));
    let audit = tempfile::tempdir().unwrap();
    let audit_file = audit.path().join("audit.jsonl");
    options
        .env
        .push(("LOANHOST_AUDIT_LOG", audit_file.display().to_string()));

    // Act
    let app = spawn_app_with(options).await;

    // Assert
    assert_eq!(app.tool_names().await, vec!["get_loan_reporting_metadata"]);
    let r = app
        .call_ok("agent-token", "get_loan_reporting_metadata", json!({}))
        .await;
    assert!(r["statuses"].is_array());
    // The audit line names the signer's key id as minisign prints it.
    use base64::Engine as _;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(&key.public)
        .unwrap();
    let id = format!(
        "{:016X}",
        u64::from_le_bytes(raw[2..10].try_into().unwrap())
    );
    let line: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&audit_file)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(line["signerKeyId"], id);
}
