//! Plugins as OCI artifacts against the reference registry (Debian's `docker-registry`,
//! distribution 2.8) started on a loopback port: `plugin push`, `plugin pull` and `plugin check
//! oci://…` through the binary, read back by an independent client (`skopeo`), a private
//! registry with htpasswd and TLS from a CA made here, and artifacts that break the layout.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::helpers::{free_port, loanhost_binary, root, tool_manifest, tool_view, tool_wasm};

/// A registry process on a loopback port, stopped when dropped.
pub(crate) struct Registry {
    _child: tokio::process::Child,
    pub(crate) host: String,
    pub(crate) dir: tempfile::TempDir,
    /// The CA's certificate (PEM) when it serves TLS.
    ca: Option<PathBuf>,
}

impl Registry {
    /// Starts a registry; with `user` it asks for that user's password (htpasswd), with `tls`
    /// it serves a certificate for 127.0.0.1 signed by a CA of its own. Returns once the
    /// registry says it listens.
    pub(crate) async fn start(user: Option<(&str, &str)>, tls: bool) -> Registry {
        Registry::start_with(tls, |dir| {
            let (name, password) = user?;
            let hash = bcrypt::hash(password, 4).unwrap();
            std::fs::write(dir.join("htpasswd"), format!("{name}:{hash}\n")).unwrap();
            Some(format!(
                "auth:\n  htpasswd:\n    realm: loanhost-tests\n    path: {}\n",
                dir.join("htpasswd").display()
            ))
        })
        .await
    }

    /// Starts a registry whose `auth:` section `auth` writes (given the registry's folder).
    pub(crate) async fn start_with(
        tls: bool,
        auth: impl FnOnce(&Path) -> Option<String>,
    ) -> Registry {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let host = format!("127.0.0.1:{port}");
        let mut config = format!(
            "version: 0.1\nlog:\n  level: info\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: {host}\n",
            dir.path().join("data").display()
        );
        let mut ca = None;
        if tls {
            let (ca_pem, cert_pem, key_pem) = certificates();
            for (file, pem) in [
                ("ca.pem", &ca_pem),
                ("cert.pem", &cert_pem),
                ("key.pem", &key_pem),
            ] {
                std::fs::write(dir.path().join(file), pem).unwrap();
            }
            config.push_str(&format!(
                "  tls:\n    certificate: {}\n    key: {}\n",
                dir.path().join("cert.pem").display(),
                dir.path().join("key.pem").display()
            ));
            ca = Some(dir.path().join("ca.pem"));
        }
        if let Some(section) = auth(dir.path()) {
            config.push_str(&section);
        }
        std::fs::write(dir.path().join("config.yml"), config).unwrap();
        let child = loanhost_tests::serve_registry(&dir.path().join("config.yml")).await;
        Registry {
            _child: child,
            host,
            dir,
            ca,
        }
    }

    pub(crate) fn reference(&self, repository_and_tag: &str) -> String {
        format!("oci://{}/{repository_and_tag}", self.host)
    }
}

/// A CA, and a server certificate for 127.0.0.1 it signed, with its key: PEM each.
fn certificates() -> (String, String, String) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, KeyUsagePurpose};
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let server = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    let server_key = KeyPair::generate().unwrap();
    let server_cert = server.signed_by(&server_key, &issuer).unwrap();
    (ca_cert.pem(), server_cert.pem(), server_key.serialize_pem())
}

/// Runs `loanhost plugin <args>` with `env`; (success, stdout, stderr).
pub(crate) async fn loanhost(args: &[&str], env: &[(&str, String)]) -> (bool, String, String) {
    let binary = loanhost_binary().expect("the loanhost binary of this test run");
    let mut cmd = tokio::process::Command::new(binary);
    cmd.arg("plugin").args(args).current_dir(root());
    cmd.env("HOME", std::env::temp_dir()); // no user auth file is read
    cmd.env_remove("REGISTRY_AUTH_FILE")
        .env_remove("XDG_RUNTIME_DIR");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.kill_on_drop(true).output().await.unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A shipped tool's files as this test run built them (component, manifest and, when the
/// manifest declares one, its view), written into a folder of their own (removed when the
/// first value is dropped): (folder, component, manifest).
pub(crate) fn shipped(tool: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let folder = tempfile::tempdir().unwrap();
    let dir = folder.path();
    let manifest = tool_manifest(tool);
    if manifest.contains("\n[view]") {
        std::fs::write(dir.join(format!("{tool}.html")), tool_view(tool).unwrap()).unwrap();
    }
    std::fs::write(dir.join(format!("{tool}.wasm")), tool_wasm(tool)).unwrap();
    std::fs::write(dir.join(format!("{tool}.toml")), manifest).unwrap();
    let (wasm, toml) = (
        dir.join(format!("{tool}.wasm")),
        dir.join(format!("{tool}.toml")),
    );
    (folder, wasm, toml)
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[tokio::test]
async fn a_pushed_plugin_reads_back_the_same_through_skopeo_pull_and_check() {
    // Arrange: the shipped pipeline report (component, manifest and view) and a plain-HTTP
    // loopback registry.
    let registry = Registry::start(None, false).await;
    let (_files, wasm, manifest) = shipped("loan_pipeline_report");
    let env = [("LOANHOST_REGISTRY_PLAIN_HTTP", registry.host.clone())];
    let reference = registry.reference("team/loan_pipeline_report:1.0");

    // Act
    let (pushed, digest, why) = loanhost(
        &[
            "push",
            path(&wasm),
            path(&manifest),
            &reference,
            "--unsigned",
        ],
        &env,
    )
    .await;
    assert!(pushed, "{why}");
    let digest = digest.trim().to_string();
    let out = registry.dir.path().join("pulled");
    let pinned = format!("{}@{digest}", reference.rsplit_once(':').unwrap().0);
    let (pulled, files, why) = loanhost(&["pull", &pinned, "--out", path(&out)], &env).await;
    assert!(pulled, "{why}");
    let (checked, description, why) = loanhost(&["check", &reference], &env).await;
    let raw = std::process::Command::new("skopeo")
        .args(["inspect", "--raw", "--tls-verify=false"])
        .arg(format!(
            "docker://{}/team/loan_pipeline_report:1.0",
            registry.host
        ))
        .output()
        .unwrap();
    let copied = registry.dir.path().join("skopeo");
    let copy = std::process::Command::new("skopeo")
        .args(["copy", "--src-tls-verify=false"])
        .arg(format!(
            "docker://{}/team/loan_pipeline_report@{digest}",
            registry.host
        ))
        .arg(format!("dir:{}", copied.display()))
        .output()
        .unwrap();

    // Assert: the digest is the manifest's, the layout the CNCF Wasm one, the component layer
    // the built component byte for byte, and every file comes back as it went.
    assert!(
        digest.starts_with("sha256:") && digest.len() == 71,
        "{digest}"
    );
    assert!(
        raw.status.success(),
        "{}",
        String::from_utf8_lossy(&raw.stderr)
    );
    assert_eq!(format!("sha256:{:x}", Sha256::digest(&raw.stdout)), digest);
    let oci: Value = serde_json::from_slice(&raw.stdout).unwrap();
    assert_eq!(
        oci["config"]["mediaType"],
        "application/vnd.wasm.config.v0+json"
    );
    assert_eq!(oci["layers"][0]["mediaType"], "application/wasm");
    let titles: Vec<&str> = oci["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            l["annotations"]["org.opencontainers.image.title"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(
        titles,
        [
            "loan_pipeline_report.wasm",
            "loan_pipeline_report.toml",
            "loan_pipeline_report.html"
        ]
    );
    assert!(
        copy.status.success(),
        "{}",
        String::from_utf8_lossy(&copy.stderr)
    );
    let layer = oci["layers"][0]["digest"]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:");
    assert_eq!(
        std::fs::read(copied.join(layer)).unwrap(),
        std::fs::read(&wasm).unwrap()
    );
    assert_eq!(files.lines().count(), 3, "{files}");
    for file in titles {
        assert_eq!(
            std::fs::read(out.join(file)).unwrap(),
            std::fs::read(wasm.with_file_name(file)).unwrap(),
            "{file}"
        );
    }
    assert!(checked, "{why}");
    let description: Value = serde_json::from_str(&description).unwrap();
    assert_eq!(description["name"], "loan_pipeline_report");
}

#[tokio::test]
async fn a_private_registry_takes_the_auth_files_credentials_over_tls_from_its_ca() {
    // Arrange: htpasswd and TLS; an auth file in the containers format.
    let registry = Registry::start(Some(("ci", "s3cret-pass")), true).await;
    let (_files, wasm, manifest) = shipped("get_loan_reporting_metadata");
    let reference = registry.reference("team/metadata:2.0");
    let auth_file = |file: &str, credentials: &str| {
        use base64::Engine as _;
        let encoded = base64::engine::general_purpose::STANDARD.encode(credentials);
        let path = registry.dir.path().join(file);
        let auths = json!({"auths": {registry.host.clone(): {"auth": encoded}}});
        std::fs::write(&path, auths.to_string()).unwrap();
        path
    };
    let auth = auth_file("auth.json", "ci:s3cret-pass");
    let wrong = auth_file("wrong.json", "ci:not-the-password");
    let ca = registry.ca.clone().unwrap().display().to_string();
    let files = [path(&wasm), path(&manifest)];

    // Act
    let no_ca = loanhost(
        &["push", files[0], files[1], &reference, "--unsigned"],
        &[("LOANHOST_REGISTRY_AUTH_FILE", auth.display().to_string())],
    )
    .await;
    let anonymous = loanhost(
        &["push", files[0], files[1], &reference, "--unsigned"],
        &[("LOANHOST_REGISTRY_CA_FILE", ca.clone())],
    )
    .await;
    let wrong_password = loanhost(
        &["push", files[0], files[1], &reference, "--unsigned"],
        &[
            ("LOANHOST_REGISTRY_CA_FILE", ca.clone()),
            ("LOANHOST_REGISTRY_AUTH_FILE", wrong.display().to_string()),
        ],
    )
    .await;
    let with_both = [
        ("LOANHOST_REGISTRY_CA_FILE", ca.clone()),
        ("LOANHOST_REGISTRY_AUTH_FILE", auth.display().to_string()),
    ];
    let pushed = loanhost(
        &["push", files[0], files[1], &reference, "--unsigned"],
        &with_both,
    )
    .await;
    let checked = loanhost(&["check", &reference], &with_both).await;

    // Assert: refused without the CA and without the right credentials, never printing one;
    // served with both.
    for (what, (ok, _, why)) in [
        ("no CA", &no_ca),
        ("anonymous", &anonymous),
        ("a wrong password", &wrong_password),
    ] {
        assert!(!ok, "{what}: pushed");
        assert!(why.contains(&reference), "{what}: {why}");
        assert!(
            !why.contains("s3cret") && !why.contains("not-the-password"),
            "{what}: {why}"
        );
    }
    assert!(pushed.0, "{}", pushed.2);
    assert!(checked.0, "{}", checked.2);
}

/// Puts `bytes` as a blob of `repository` (one monolithic upload); its digest.
async fn put_blob(client: &reqwest::Client, host: &str, repository: &str, bytes: &[u8]) -> String {
    let digest = format!("sha256:{:x}", Sha256::digest(bytes));
    let started = client
        .post(format!("http://{host}/v2/{repository}/blobs/uploads/"))
        .send()
        .await
        .unwrap();
    let location = started.headers()["location"].to_str().unwrap().to_string();
    let location = if location.starts_with("http") {
        location
    } else {
        format!("http://{host}{location}")
    };
    let separator = if location.contains('?') { '&' } else { '?' };
    let resp = client
        .put(format!("{location}{separator}digest={digest}"))
        .header("content-type", "application/octet-stream")
        .body(bytes.to_vec())
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    digest
}

#[tokio::test]
async fn artifacts_that_break_the_layout_are_refused_with_their_reason_and_write_nothing() {
    // Arrange: hand-made manifests of real blobs on a plain-HTTP loopback registry.
    let registry = Registry::start(None, false).await;
    let client = reqwest::Client::new();
    let (_files, wasm, manifest) = shipped("get_loan_reporting_metadata");
    let (wasm, toml) = (
        std::fs::read(wasm).unwrap(),
        std::fs::read(manifest).unwrap(),
    );
    let repository = "team/bad";
    let config = br#"{"architecture":"wasm","os":"wasip2"}"#;
    let config_digest = put_blob(&client, &registry.host, repository, config).await;
    let wasm_digest = put_blob(&client, &registry.host, repository, &wasm).await;
    let toml_digest = put_blob(&client, &registry.host, repository, &toml).await;
    let layer = |title: &str, media: &str, digest: &str, size: usize| {
        json!({"mediaType": media, "digest": digest, "size": size,
               "annotations": {"org.opencontainers.image.title": title}})
    };
    let component = layer(
        "get_loan_reporting_metadata.wasm",
        "application/wasm",
        &wasm_digest,
        wasm.len(),
    );
    let plugin_manifest = layer(
        "get_loan_reporting_metadata.toml",
        "application/vnd.loanhost.plugin.manifest.v1+toml",
        &toml_digest,
        toml.len(),
    );
    let cases = [
        (
            "escape",
            vec![
                component.clone(),
                layer(
                    "../../escape.toml",
                    "application/vnd.loanhost.plugin.manifest.v1+toml",
                    &toml_digest,
                    toml.len(),
                ),
            ],
            "no file of plugin",
        ),
        (
            "oversized",
            vec![
                component.clone(),
                layer(
                    "get_loan_reporting_metadata.toml",
                    "application/vnd.loanhost.plugin.manifest.v1+toml",
                    &wasm_digest,
                    wasm.len(),
                ),
            ],
            "over its cap",
        ),
        (
            "no-manifest",
            vec![component.clone()],
            "no get_loan_reporting_metadata.toml layer",
        ),
        (
            "not-first",
            vec![plugin_manifest.clone(), component.clone()],
            "not a component",
        ),
        (
            "wrong-type",
            vec![
                component.clone(),
                layer(
                    "get_loan_reporting_metadata.toml",
                    "text/plain",
                    &toml_digest,
                    toml.len(),
                ),
            ],
            "not application/vnd.loanhost.plugin.manifest.v1+toml",
        ),
    ];
    for (tag, layers, _) in &cases {
        let body = json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.wasm.config.v0+json", "digest": config_digest, "size": config.len()},
            "layers": layers});
        let resp = client
            .put(format!(
                "http://{}/v2/{repository}/manifests/{tag}",
                registry.host
            ))
            .header("content-type", "application/vnd.oci.image.manifest.v1+json")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        let status = resp.status();
        assert!(
            status.is_success(),
            "{tag}: {status} {}",
            resp.text().await.unwrap()
        );
    }
    let env = [("LOANHOST_REGISTRY_PLAIN_HTTP", registry.host.clone())];

    for (tag, _, reason) in cases {
        // Act
        let out = registry.dir.path().join(tag);
        let (ok, _, why) = loanhost(
            &[
                "pull",
                &registry.reference(&format!("{repository}:{tag}")),
                "--out",
                path(&out),
            ],
            &env,
        )
        .await;

        // Assert
        assert!(!ok, "{tag}: pulled");
        assert!(why.contains(reason), "{tag}: {why}");
        assert!(
            !out.exists() || std::fs::read_dir(&out).unwrap().next().is_none(),
            "{tag}: wrote files"
        );
        assert!(!registry.dir.path().join("escape.toml").exists());
    }
}
