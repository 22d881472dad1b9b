//! Unit tests of references, the auth file and the plain-HTTP rule.

use super::*;

#[test]
fn references_name_a_registry_and_a_tag_or_digest() {
    // Arrange / Act / Assert
    let r = parse_reference("oci://127.0.0.1:5000/team/report_loans:1.2").unwrap();
    assert_eq!(
        (r.registry(), r.repository(), r.tag()),
        ("127.0.0.1:5000", "team/report_loans", Some("1.2"))
    );
    let digest = format!("sha256:{}", "a".repeat(64));
    let pinned = parse_reference(&format!("oci://registry.example.com/r@{digest}")).unwrap();
    assert_eq!(pinned.digest(), Some(digest.as_str()));
    for bad in [
        "report_loans:1.2",
        "oci://report_loans:1.2",
        "oci://registry.example.com/team/report_loans",
        "oci://",
        "oci://registry.example.com/a b:1",
    ] {
        assert!(
            matches!(parse_reference(bad), Err(OciError::Reference(_))),
            "{bad}"
        );
    }
}

#[test]
fn plain_http_is_for_loopback_registries_only() {
    assert!(is_loopback("127.0.0.1:5000") && is_loopback("localhost:5000"));
    assert!(is_loopback("[::1]:5000") && !is_loopback("registry.example.com:5000"));
    let options = RegistryOptions {
        plain_http: vec!["10.0.0.5:5000".into()],
        ..Default::default()
    };
    assert_eq!(
        client(&options).err().map(|e| e.to_string()),
        Some(
            "10.0.0.5:5000: plain http:// is allowed only for a registry on a loopback address"
                .into()
        )
    );
}

#[test]
fn the_auth_file_gives_each_registry_its_credentials_and_names_no_secret_when_wrong() {
    // Arrange: the containers/Docker format, both spellings of an entry.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("auth.json");
    std::fs::write(
        &file,
        r#"{"auths": {"127.0.0.1:5000": {"auth": "YWxpY2U6czNjcmV0"},
                      "https://registry.example.com": {"username": "bob", "password": "hunter2"},
                      "broken.example.com": {"auth": "not base64!"}}}"#,
    )
    .unwrap();
    let options = RegistryOptions {
        auth_file: Some(file.clone()),
        ..Default::default()
    };

    // Act
    let local = auth_for("127.0.0.1:5000", &options).unwrap();
    let remote = auth_for("registry.example.com", &options).unwrap();
    let other = auth_for("elsewhere.example.com", &options).unwrap();
    let broken = auth_for("broken.example.com", &options)
        .unwrap_err()
        .to_string();

    // Assert
    assert!(matches!(local, RegistryAuth::Basic(u, p) if u == "alice" && p == "s3cret"));
    assert!(matches!(remote, RegistryAuth::Basic(u, p) if u == "bob" && p == "hunter2"));
    assert!(matches!(other, RegistryAuth::Anonymous));
    assert!(
        broken.contains("broken.example.com") && broken.contains("not base64"),
        "{broken}"
    );
    assert!(!broken.contains("not base64!\""), "{broken}");
}
