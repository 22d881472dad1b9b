//! Unit tests of references, the auth file, the plain-HTTP rule, layer checks and the cache.

use super::*;
use oci_client::secrets::RegistryAuth;

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

/// A descriptor of `bytes` as the layer `file` (title annotation, media type by name).
fn layer(file: &str, media_type: &str, bytes: &[u8]) -> oci_client::manifest::OciDescriptor {
    use sha2::Digest as _;
    oci_client::manifest::OciDescriptor {
        media_type: media_type.into(),
        digest: format!("sha256:{:x}", sha2::Sha256::digest(bytes)),
        size: bytes.len() as i64,
        annotations: Some(
            [(
                "org.opencontainers.image.title".to_string(),
                file.to_string(),
            )]
            .into(),
        ),
        ..Default::default()
    }
}

#[test]
fn a_layer_is_its_bytes_only_when_size_and_digest_match() {
    // Arrange
    let bytes = b"\0asm component bytes";
    let descriptor = layer("t.wasm", "application/wasm", bytes);
    let mut changed = bytes.to_vec();
    changed[5] ^= 1;

    // Act / Assert
    assert_eq!(layers::check_layer("t.wasm", &descriptor, bytes), Ok(()));
    let why = layers::check_layer("t.wasm", &descriptor, &changed).unwrap_err();
    assert!(why.contains("its bytes have the digest"), "{why}");
    let why = layers::check_layer("t.wasm", &descriptor, &bytes[1..]).unwrap_err();
    assert!(why.contains("bytes where the manifest says"), "{why}");
}

#[test]
fn a_cache_entry_is_served_only_as_its_digest_names_it() {
    // Arrange: an entry as the follower writes it (the files, then the manifest beside them).
    use sha2::Digest as _;
    let dir = tempfile::tempdir().unwrap();
    let (wasm, toml) = (b"\0asm component".to_vec(), b"name = \"t\"".to_vec());
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": layer("config", "application/vnd.wasm.config.v0+json", b"{}"),
        "layers": [
            layer("t.wasm", "application/wasm", &wasm),
            layer("t.toml", "application/vnd.loanhost.plugin.manifest.v1+toml", &toml),
        ],
    }))
    .unwrap();
    let digest = Digest::parse(&format!("sha256:{:x}", sha2::Sha256::digest(&manifest))).unwrap();
    std::fs::write(dir.path().join("t.wasm"), &wasm).unwrap();
    std::fs::write(dir.path().join("t.toml"), &toml).unwrap();
    std::fs::write(dir.path().join(cache::MANIFEST_FILE), &manifest).unwrap();

    // Act / Assert: intact, it is the artifact; a changed file, another digest, or a file
    // added are each refused.
    let verified = cache::verify(dir.path(), &digest).unwrap();
    assert_eq!(verified.name, "t");
    assert_eq!(
        verified.files,
        vec![
            ("t.wasm".to_string(), wasm.clone()),
            ("t.toml".to_string(), toml.clone())
        ]
    );
    let other = Digest::parse(&format!("sha256:{}", "0".repeat(64))).unwrap();
    assert!(cache::verify(dir.path(), &other).is_err());
    std::fs::write(dir.path().join("t.extra"), b"x").unwrap();
    let why = cache::verify(dir.path(), &digest).unwrap_err();
    assert!(why.contains("t.extra is no file of the artifact"), "{why}");
    std::fs::remove_file(dir.path().join("t.extra")).unwrap();
    std::fs::write(dir.path().join("t.toml"), b"name = \"u\"").unwrap();
    let why = cache::verify(dir.path(), &digest).unwrap_err();
    assert!(
        why.contains("cached layer t.toml: its bytes have the digest"),
        "{why}"
    );
}
