//! A view's files in the plugin folder: covered by its plugin's signature, refused with its
//! reason when missing, undeclared, oversized or not HTML, and hot-reloaded with its plugin.

use std::io::Cursor;

use loanhost::clock::Clock;
use loanhost::plugins::{ManifestBinding, PluginFiles, Plugins, SignaturePolicy};
use serde_json::{json, Value};

use super::app_with_every_tool;
use crate::helpers::{tool_manifest, tool_view, tool_wasm};

pub(super) struct Signer {
    public: String,
    secret: minisign::SecretKey,
}

impl Signer {
    fn new() -> Signer {
        let kp = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
        Signer {
            public: kp.pk.to_base64(),
            secret: kp.sk,
        }
    }

    fn sign(&self, bytes: &[u8]) -> String {
        self.sign_with(bytes, None)
    }

    fn sign_with(&self, bytes: &[u8], comment: Option<&str>) -> String {
        minisign::sign(None, &self.secret, Cursor::new(bytes), comment, None)
            .unwrap()
            .to_string()
    }

    fn required(&self) -> SignaturePolicy {
        SignaturePolicy::new(true, std::slice::from_ref(&self.public)).unwrap()
    }
}

/// A file to deploy: its name, its bytes (none: absent) and who signs it.
pub(super) type DeployedFile<'a> = (&'a str, Option<&'a [u8]>, Option<&'a Signer>);

/// Writes report_loans into `dir` (its view as given), each file signed by `signer` when one
/// is given for it: (component and manifest, view).
pub(super) fn deploy_report_loans(
    dir: &std::path::Path,
    view: Option<&[u8]>,
    manifest: &str,
    signers: (Option<&Signer>, Option<&Signer>),
) {
    let wasm = tool_wasm("report_loans");
    let files: [DeployedFile; 3] = [
        ("report_loans.wasm", Some(&wasm), signers.0),
        ("report_loans.toml", Some(manifest.as_bytes()), signers.0),
        ("report_loans.html", view, signers.1),
    ];
    for (name, bytes, signer) in files {
        let path = dir.join(name);
        let sig = dir.join(format!("{name}.minisig"));
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(&sig);
        if let Some(bytes) = bytes {
            std::fs::write(&path, bytes).unwrap();
            if let Some(s) = signer {
                // A manifest's signature names the component and the view it is deployed with.
                let signed = if name.ends_with(".toml") {
                    s.sign_with(bytes, Some(&ManifestBinding::of(&wasm, view).comment()))
                } else {
                    s.sign(bytes)
                };
                std::fs::write(&sig, signed).unwrap();
            }
        }
    }
}

pub(super) async fn load(
    dir: &std::path::Path,
    policy: SignaturePolicy,
) -> Result<Option<String>, String> {
    let plugins = Plugins::new(None, policy, Clock::system()).unwrap();
    plugins
        .load(&PluginFiles::in_dir(dir, "report_loans"))
        .await
        .map(|p| p.view.map(|v| v.uri))
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn a_view_is_covered_by_the_plugins_signature() {
    // Arrange
    let dir = tempfile::tempdir().unwrap();
    let key = Signer::new();
    let other = Signer::new();
    let view = tool_view("report_loans").unwrap();
    let manifest = tool_manifest("report_loans");
    let mut changed = view.clone();
    changed.extend_from_slice(b"<script>parent.postMessage('exfiltrate', '*')</script>");

    // Act + Assert: signed throughout, it loads with its view.
    deploy_report_loans(dir.path(), Some(&view), &manifest, (Some(&key), Some(&key)));
    assert_eq!(
        load(dir.path(), key.required()).await,
        Ok(Some("ui://loanhost/report_loans".into()))
    );

    // The view unsigned, while signatures are required.
    deploy_report_loans(dir.path(), Some(&view), &manifest, (Some(&key), None));
    let e = load(dir.path(), key.required()).await.unwrap_err();
    assert!(e.contains("report_loans.html.minisig"), "{e}");

    // The view changed after it was signed.
    deploy_report_loans(dir.path(), Some(&view), &manifest, (Some(&key), Some(&key)));
    std::fs::write(dir.path().join("report_loans.html"), &changed).unwrap();
    let e = load(dir.path(), key.required()).await.unwrap_err();
    assert!(
        e.ends_with("report_loans.html: report_loans.html.minisig: the signature does not verify against any trusted key (tampered plugin or untrusted signer)"),
        "{e}"
    );

    // Another view, itself validly signed by the same key, put beside the signed manifest: the
    // manifest's signature names the view it was signed with.
    deploy_report_loans(dir.path(), Some(&view), &manifest, (Some(&key), Some(&key)));
    std::fs::write(dir.path().join("report_loans.html"), &changed).unwrap();
    std::fs::write(
        dir.path().join("report_loans.html.minisig"),
        key.sign(&changed),
    )
    .unwrap();
    let e = load(dir.path(), key.required()).await.unwrap_err();
    assert!(
        e.contains("report_loans.toml: its signature names view sha256:")
            && e.contains("but the view beside it is sha256:"),
        "{e}"
    );

    // Signed by a key nobody trusts.
    deploy_report_loans(
        dir.path(),
        Some(&view),
        &manifest,
        (Some(&key), Some(&other)),
    );
    assert!(load(dir.path(), key.required()).await.is_err());

    // Signatures optional: a signed plugin still needs its view signed, and a signed view
    // does not make an unsigned plugin trusted.
    let optional = SignaturePolicy::new(false, std::slice::from_ref(&key.public)).unwrap();
    deploy_report_loans(dir.path(), Some(&view), &manifest, (Some(&key), None));
    let e = load(dir.path(), optional.clone()).await.unwrap_err();
    assert!(
        e.contains("the plugin is signed but its view is not: a signature must cover the view too (sign it with the same key into report_loans.html.minisig)"),
        "{e}"
    );
    deploy_report_loans(dir.path(), Some(&view), &manifest, (None, Some(&key)));
    let e = load(dir.path(), optional.clone()).await.unwrap_err();
    assert!(
        e.ends_with("report_loans.html: the view is signed but the plugin is not"),
        "{e}"
    );
    deploy_report_loans(dir.path(), Some(&view), &manifest, (None, None));
    assert!(load(dir.path(), optional).await.unwrap().is_some());
}

#[tokio::test]
async fn a_view_missing_undeclared_oversized_or_not_html_is_refused_naming_why() {
    // Arrange
    let dir = tempfile::tempdir().unwrap();
    let view = tool_view("report_loans").unwrap();
    let manifest = tool_manifest("report_loans");
    let undeclared = manifest[..manifest.find("\n# The MCP Apps view").unwrap()].to_string();
    let any = SignaturePolicy::default();
    let mut big = view.clone();
    big.resize(2 * 1024 * 1024 + 1, b' ');

    // Act + Assert
    deploy_report_loans(dir.path(), None, &manifest, (None, None));
    assert!(load(dir.path(), any.clone()).await.unwrap_err().ends_with(
        "report_loans.toml: view: the manifest declares a view but report_loans.html is missing"
    ));
    deploy_report_loans(dir.path(), Some(&view), &undeclared, (None, None));
    assert!(load(dir.path(), any.clone())
        .await
        .unwrap_err()
        .ends_with("report_loans.html: a view file is present but the manifest declares no [view]: add a [view] table to the manifest, or remove the file"));
    deploy_report_loans(dir.path(), None, &undeclared, (None, None));
    assert_eq!(load(dir.path(), any.clone()).await, Ok(None));
    deploy_report_loans(dir.path(), Some(&big), &manifest, (None, None));
    let e = load(dir.path(), any.clone()).await.unwrap_err();
    assert!(
        e.contains("the view is 2097153 bytes; a view may have at most 2097152"),
        "{e}"
    );
    deploy_report_loans(
        dir.path(),
        Some(b"{\"not\": \"html\"}"),
        &manifest,
        (None, None),
    );
    let e = load(dir.path(), any).await.unwrap_err();
    assert!(e.ends_with("it must start with <!DOCTYPE html>"), "{e}");
}

#[tokio::test]
async fn a_changed_view_is_hot_reloaded_with_its_plugin() {
    // Arrange
    let app = app_with_every_tool().await;
    let marker = "<p id=\"hot-reloaded\"></p>";
    let view = String::from_utf8(tool_view("report_loans").unwrap())
        .unwrap()
        .replace(
            "<main id=\"app\"></main>",
            &format!("<main id=\"app\"></main>{marker}"),
        );
    let served = |reply: Value| {
        reply["result"]["contents"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains(marker)
    };
    let read = json!({"uri": "ui://loanhost/report_loans"});
    let before = app.rpc("agent-token", "resources/read", read.clone()).await;

    // Act
    app.deploy_file("report_loans.html", view.as_bytes());

    // Assert: the server's own reloader serves the new view (bounded wait).
    assert!(!served(before));
    app.eventually("the changed view is served", || async {
        served(app.rpc("agent-token", "resources/read", read.clone()).await)
    })
    .await;
}
