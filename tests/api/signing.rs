//! Signatures and WIT versions: tampered and unsigned plugins refused in required mode; a
//! plugin built against another WIT major version refused with both versions named.

use std::io::Cursor;

use loanhost::clock::Clock;
use loanhost::plugins::{HostOptions, ManifestBinding, PluginFiles, Plugins, SignaturePolicy};
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
async fn a_component_with_many_memories_is_refused_at_load() {
    // Arrange: 120 core instances, each with its own linear memory (built here from text).
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("(component (core module $m (memory 1))");
    for i in 0..120 {
        text.push_str(&format!(" (core instance $i{i} (instantiate $m))"));
    }
    text.push(')');
    let wasm = wat::parse_str(&text).unwrap();
    std::fs::write(dir.path().join("hoard.wasm"), wasm).unwrap();
    std::fs::write(
        dir.path().join("hoard.toml"),
        manifest("hoard", DEFAULT_ROLES, &[], 16, 1000, 1000),
    )
    .unwrap();
    let plugins = Plugins::new(None, SignaturePolicy::default(), Clock::system()).unwrap();

    // Act
    let e = plugins
        .load(&PluginFiles::in_dir(dir.path(), "hoard"))
        .await
        .unwrap_err()
        .to_string();

    // Assert: refused before compiling, by the manifest's limit.
    assert!(
        e.ends_with("hoard.wasm: the component creates 120 core module instances; its manifest allows 8 (limits.core_instances: default 8, at most 64; a Python plugin built with componentize-py needs about 40)"),
        "{e}"
    );

    // Arrange: three instances each with a memory, within the instance limit.
    let wasm = wat::parse_str(
        "(component (core module $m (memory 1)) (core instance (instantiate $m)) (core instance (instantiate $m)) (core instance (instantiate $m)))",
    )
    .unwrap();
    std::fs::write(dir.path().join("hoard.wasm"), wasm).unwrap();
    // Act
    let e = plugins
        .load(&PluginFiles::in_dir(dir.path(), "hoard"))
        .await
        .unwrap_err()
        .to_string();
    // Assert: the host's ceiling on memories.
    assert!(
        e.ends_with("hoard.wasm: the component defines 3 linear memories; the host allows 2"),
        "{e}"
    );
}

#[tokio::test]
async fn a_planted_precompiled_component_is_not_run() {
    // Without the MAC, as an attacker without the key would write it.
    planted_entry_is_not_run(false).await;
}

#[tokio::test]
async fn an_authenticated_entry_copied_under_another_name_is_not_run() {
    // The whole entry, MAC included: the MAC binds the entry's name (digest and engine), so
    // a copy is no rollback to another build.
    planted_entry_is_not_run(true).await;
}

async fn planted_entry_is_not_run(with_mac: bool) {
    // Arrange: a server has cached its metadata tool; an attacker who can write the cache
    // directory plants the metadata tool's native code under the name the `misbehave`
    // fixture will be looked up by.
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let key_file = dir.path().join("cache.key");
    let options = |name: &str, wasm: Vec<u8>, manifest: String| {
        let mut o = AppOptions::default().plugin(name, wasm, manifest);
        o.env
            .push(("LOANHOST_CACHE_DIR", cache.display().to_string()));
        o.env
            .push(("LOANHOST_CACHE_KEY_FILE", key_file.display().to_string()));
        o
    };
    let metadata = tool_wasm("get_loan_reporting_metadata");
    let first = spawn_app_with(options(
        "get_loan_reporting_metadata",
        metadata.clone(),
        tool_manifest("get_loan_reporting_metadata"),
    ))
    .await;
    drop(first);
    let cached: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
        .collect();
    assert_eq!(cached.len(), 1, "{cached:?}");
    let digest = |b: &[u8]| {
        use sha2::Digest as _;
        hex::encode(sha2::Sha256::digest(b))
    };
    let misbehave = fixture_wasm("misbehave");
    let compat = cached[0]
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .split_once('-')
        .unwrap()
        .1
        .to_string();
    let planted = cache.join(format!("{}-{compat}", digest(&misbehave)));
    let native = std::fs::read(&cached[0]).unwrap();
    let kept = if with_mac {
        native.len()
    } else {
        native.len() - 32
    };
    std::fs::write(&planted, &native[..kept]).unwrap();

    // Act
    let app = spawn_app_with(options(
        "misbehave",
        misbehave,
        manifest("misbehave", DEFAULT_ROLES, &[], 16, 2000, 65536),
    ))
    .await;

    // Assert: the fixture itself runs, not the planted code (which would describe itself as
    // the metadata tool and be refused, or worse, run).
    assert_eq!(app.tool_names().await, vec!["misbehave"]);
    let r = app
        .call_ok("agent-token", "misbehave", json!({"action": "echo"}))
        .await;
    assert_eq!(r["userId"], "00000000-0000-0000-0000-0000000000b2");
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
    assert!(e.to_string().ends_with("future.wasm: built against loan:reporting@2.0.0; this host supports loan:reporting@1.0.0, loan:reporting@1.1.0"), "{e}");
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
            "a core WebAssembly module, not a component (build with wasm-component-ld; see docs/plugins.md)"
        ),
        "{e}"
    );
}

#[tokio::test]
async fn a_component_importing_wasi_or_anything_foreign_is_refused() {
    // Arrange: components built here from text, importing a WASI interface and an interface
    // of some other package (no tool export needed: imports are checked first).
    let dir = tempfile::tempdir().unwrap();
    let plugins = Plugins::new(None, SignaturePolicy::default(), Clock::system()).unwrap();
    let load = |import: &str| {
        let wasm = wat::parse_str(format!("(component (import \"{import}\" (instance)))")).unwrap();
        std::fs::write(dir.path().join("sneaky.wasm"), wasm).unwrap();
        std::fs::write(
            dir.path().join("sneaky.toml"),
            manifest("sneaky", DEFAULT_ROLES, &[], 16, 1000, 1000),
        )
        .unwrap();
        let plugins = plugins.clone();
        let files = PluginFiles::in_dir(dir.path(), "sneaky");
        async move { plugins.load(&files).await.unwrap_err().to_string() }
    };

    // Act
    let wasi = load("wasi:filesystem/types@0.2.0").await;
    let foreign = load("loan:reporting/network@1.0.0").await;

    // Assert
    assert!(
        wasi.ends_with("sneaky.wasm: imports `wasi:filesystem/types@0.2.0`, which this host does not provide: plugins may import only the loan:reporting interfaces (types, caller, clock, log, data); WASI is not offered to plugins: build with `componentize-py … componentize --stub-wasi` (Python), `jco componentize … --disable all` (JavaScript/TypeScript), or for Rust the wasm32-unknown-unknown target (scripts/build-plugin.sh does each)"),
        "{wasi}"
    );
    assert!(
        !foreign.contains("--stub-wasi"),
        "no WASI advice for a foreign import: {foreign}"
    );
    assert!(
        foreign
            .contains("imports `loan:reporting/network@1.0.0`, which this host does not provide"),
        "{foreign}"
    );
}

#[tokio::test]
async fn a_component_bigger_than_its_manifest_allows_is_refused_before_compiling() {
    // Arrange: a component of nine core instances (an interpreter-sized runtime has ~40), and
    // one whose memory starts at 20 MiB; manifests with the default limits, then raised ones.
    let dir = tempfile::tempdir().unwrap();
    let plugins = Plugins::new(None, SignaturePolicy::default(), Clock::system()).unwrap();
    let load = |body: String, memory_mib: u32, extra: &str| {
        let wasm = wat::parse_str(format!("(component {body})")).unwrap();
        std::fs::write(dir.path().join("big.wasm"), wasm).unwrap();
        let manifest = manifest("big", DEFAULT_ROLES, &[], memory_mib, 1000, 1000);
        std::fs::write(dir.path().join("big.toml"), format!("{manifest}{extra}")).unwrap();
        let plugins = plugins.clone();
        let files = PluginFiles::in_dir(dir.path(), "big");
        async move { plugins.load(&files).await.unwrap_err().to_string() }
    };
    let nine = format!(
        "(core module $m){}",
        "(core instance (instantiate $m))".repeat(9)
    );
    let big_memory = "(core module $m (memory 320)) (core instance (instantiate $m))".to_string();

    // Act
    let many = load(nine.clone(), 16, "").await;
    let allowed = load(nine, 16, "core_instances = 9\n").await;
    let memory = load(big_memory.clone(), 16, "").await;
    let enough = load(big_memory, 32, "").await;

    // Assert: refused with the number and the setting; once allowed, the check passes and the
    // load goes on (to fail later for want of a tool export).
    assert!(
        many.ends_with("big.wasm: the component creates 9 core module instances; its manifest allows 8 (limits.core_instances: default 8, at most 64; a Python plugin built with componentize-py needs about 40)"),
        "{many}"
    );
    assert!(allowed.contains("does not export"), "{allowed}");
    assert!(
        memory.ends_with("big.wasm: the component starts with 20 MiB of linear memory, more than its manifest's limits.memory_mib = 16 (a Python or JavaScript runtime starts with 10 to 15 MiB: give it at least 32)"),
        "{memory}"
    );
    assert!(enough.contains("does not export"), "{enough}");
}

#[tokio::test]
async fn a_refused_import_costs_no_compilation() {
    // Arrange: a host with a compile cache, and a component that imports WASI beside a module
    // (compiling a real interpreter's component takes tens of seconds).
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let mut options = HostOptions::new(SignaturePolicy::default(), Clock::system());
    options.cache_dir = Some(cache.clone());
    options.cache_key = Some([7; 32]);
    let plugins = Plugins::with_options(options).unwrap();
    let wasm = wat::parse_str(
        "(component (import \"wasi:cli/environment@0.2.0\" (instance)) (core module $m (func)) (core instance (instantiate $m)))",
    )
    .unwrap();
    std::fs::write(dir.path().join("wasi.wasm"), wasm).unwrap();
    std::fs::write(
        dir.path().join("wasi.toml"),
        manifest("wasi", DEFAULT_ROLES, &[], 16, 1000, 1000),
    )
    .unwrap();

    // Act
    let e = plugins
        .load(&PluginFiles::in_dir(dir.path(), "wasi"))
        .await
        .unwrap_err()
        .to_string();

    // Assert: refused with the flags named, from the bytes: nothing was compiled (a compiled
    // component would be in the cache).
    assert!(
        e.contains("imports `wasi:cli/environment@0.2.0`") && e.contains("--disable all"),
        "{e}"
    );
    let compiled = std::fs::read_dir(&cache)
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(compiled, 0, "the refused component was compiled");
}
