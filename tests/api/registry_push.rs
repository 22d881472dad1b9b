//! `plugin sign` and `plugin push` keep a release whole: signing a plugin signs the view beside
//! it, and a release signed only in part (a view left out) is not pushed, since every host that
//! checks signatures would refuse it; one with no signature needs `--unsigned`.

use crate::registry::{loanhost, shipped, Registry};

#[tokio::test]
async fn a_release_signed_in_part_is_not_pushed() {
    // Arrange: the shipped pipeline report (component, manifest and view) and a key.
    let registry = Registry::start(None, false).await;
    let (folder, wasm, manifest) = shipped("loan_pipeline_report");
    let (wasm, manifest) = (wasm.to_str().unwrap(), manifest.to_str().unwrap());
    let keys = folder.path().join("keys");
    let (ok, _, why) = loanhost(&["keygen", "--out", keys.to_str().unwrap()], &[]).await;
    assert!(ok, "{why}");
    let key = keys.join("loanhost.key");
    let env = [("LOANHOST_REGISTRY_PLAIN_HTTP", registry.host.clone())];
    let reference = registry.reference("team/loan_pipeline_report:1.0");
    let view = folder.path().join("loan_pipeline_report.html");
    let view_signature = folder.path().join("loan_pipeline_report.html.minisig");

    // Act: unsigned without --unsigned; then signed as the README shows it (component and
    // manifest), which signs the view too; then with the view's signature removed.
    let (unsigned, _, unsigned_why) = loanhost(&["push", wasm, manifest, &reference], &env).await;
    let (signed, printed, why) = loanhost(
        &["sign", "--key", key.to_str().unwrap(), wasm, manifest],
        &[],
    )
    .await;
    assert!(signed, "{why}");
    let view_signed = view_signature.is_file();
    let (whole, _, whole_why) = loanhost(&["push", wasm, manifest, &reference], &env).await;
    std::fs::remove_file(&view_signature).unwrap();
    let (in_part, _, in_part_why) = loanhost(&["push", wasm, manifest, &reference], &env).await;
    let (in_part_unsigned, _, _) =
        loanhost(&["push", wasm, manifest, &reference, "--unsigned"], &env).await;

    // Assert
    assert!(!unsigned);
    assert!(unsigned_why.contains("--unsigned"), "{unsigned_why}");
    assert!(view_signed, "the view beside the plugin was signed");
    assert!(
        printed.contains(&format!("{}.minisig", view.display())),
        "{printed}"
    );
    assert!(whole, "{whole_why}");
    assert!(
        !in_part && !in_part_unsigned,
        "a release signed in part is never pushed"
    );
    assert!(
        in_part_why.contains("loan_pipeline_report.html not"),
        "{in_part_why}"
    );
}
