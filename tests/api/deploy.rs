//! What operators run, run here: the server image (`scripts/image.sh`, from this build's
//! binary) under podman, read-only and non-root; the compose stack (`deploy/compose.yaml`:
//! PostgreSQL, a registry, two replicas following the plugins from it) brought up, called, sent
//! a new plugin version, and taken down; the Kubernetes manifests against the API's schemas.
//! PostgreSQL and the registry run from stand-in images built from Debian's packages
//! (`scripts/stand-in-images.sh`): public images cannot be pulled on these machines.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::{
    built, call_at, free_port, loanhost_binary, python, root, run, tool_manifest, tool_wasm,
};
use crate::registry::loanhost;

/// The tools the image ships (`plugins/tools/SHIPPED`).
fn shipped() -> Vec<String> {
    std::fs::read_to_string(root().join("plugins/tools/SHIPPED"))
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// `podman` with the settings these machines need (vfs storage, `scripts/containers.sh`'s
/// containers.conf).
fn podman() -> Command {
    let mut command = Command::new("podman");
    command
        .arg("--storage-driver")
        .arg("vfs")
        .env("CONTAINERS_CONF", containers_conf());
    command
}

fn containers_conf() -> PathBuf {
    static CONF: OnceLock<PathBuf> = OnceLock::new();
    CONF.get_or_init(|| {
        let out = run(&mut Command::new(root().join("scripts/containers.sh")));
        PathBuf::from(out.trim())
    })
    .clone()
}

/// The server image of this build (its binary, the shipped plugins), built once per run.
fn image() -> &'static str {
    static IMAGE: OnceLock<String> = OnceLock::new();
    IMAGE.get_or_init(|| {
        // One tag for every run: the previous run's image is replaced, and pruned below.
        let tag = "localhost/loanhost:test".to_string();
        let binary = loanhost_binary().expect("the loanhost binary of this build");
        run(Command::new(root().join("scripts/image.sh"))
            .arg(binary)
            .arg(&built().dist)
            .arg(&tag)
            .env("CONTAINERS_CONF", containers_conf()));
        let _ = podman().args(["image", "prune", "-f"]).output();
        tag
    })
}

/// Removes what a test started, whatever happens to the test.
struct Cleanup(Vec<Vec<String>>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for args in self.0.iter().rev() {
            let _ = podman().args(args).output();
        }
    }
}

/// Waits until `url` answers `200` (a server's readiness: a signal, bounded for a hung one).
async fn ready(url: &str) -> Value {
    for _ in 0..6000 {
        if let Ok(r) = reqwest::get(url).await {
            if r.status() == 200 {
                return r.json().await.unwrap_or(Value::Null);
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{url} never answered 200");
}

/// A `tools/call` of `tool` at `base` with `token`.
async fn call(base: &str, token: &str, tool: &str, arguments: Value) -> Value {
    call_at(&reqwest::Client::new(), base, token, tool, arguments)
        .await
        .unwrap()
}

/// A token of the demo Admin, minted inside `container` by `loanhost token`.
fn token(container: &str) -> String {
    let out = run(podman()
        .args(["exec", container, "/usr/local/bin/loanhost", "token"])
        .args(["--email", "admin@demo.loanhost.local"]));
    out.trim().to_string()
}

#[tokio::test]
async fn the_image_serves_its_plugins_read_only_as_a_non_root_user_without_a_shell() {
    // Arrange: the image, a volume with 200 demo loans imported by the image's own `seed`.
    let image = image();
    let name = format!("loanhost-test-{}", free_port());
    let _cleanup = Cleanup(vec![
        vec!["volume".into(), "rm".into(), "-f".into(), name.clone()],
        vec!["rm".into(), "-f".into(), name.clone()],
    ]);
    let read_only = ["--network", "host", "--read-only", "--tmpfs", "/tmp"];
    let volume = format!("{name}:/data");
    run(podman()
        .args(["run", "--rm"])
        .args(read_only)
        .args(["-v", &volume, image, "seed", "--loans", "200", "--import"]));
    let (port, metrics) = (free_port(), free_port());
    let base = format!("http://127.0.0.1:{port}");

    // Act: served on loopback with the dev IdP, the root filesystem read-only.
    run(podman()
        .args(["run", "-d", "--name", &name])
        .args(read_only)
        .args(["-v", &volume])
        .args(["-e", &format!("LOANHOST_LISTEN=127.0.0.1:{port}")])
        .args(["-e", &format!("LOANHOST_BASE_URL={base}")])
        .args([
            "-e",
            &format!("LOANHOST_METRICS_LISTEN=127.0.0.1:{metrics}"),
        ])
        .args(["-e", "LOANHOST_DEV_IDP=true", image]));
    let readiness = ready(&format!("http://127.0.0.1:{metrics}/ready")).await;
    let health = reqwest::get(format!("{base}/health")).await.unwrap();
    let anonymous = reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    let answer = call(
        &base,
        &token(&name),
        "report_loans",
        json!({"groupBy": "Status"}),
    )
    .await;

    // Assert: healthy, challenged, answered from the image's plugins over the imported loans.
    assert_eq!(readiness["tools"], shipped().len());
    assert_eq!(health.status(), 200);
    assert_eq!(anonymous.status(), 401);
    let challenge = anonymous.headers()["www-authenticate"].to_str().unwrap();
    assert!(challenge.contains("resource_metadata="), "{challenge}");
    assert_eq!(
        answer["result"]["structuredContent"]["totalCount"], 200,
        "{answer}"
    );

    // The image: a non-root user, its labels, no shell, and the dev IdP off by default.
    let inspect: Value =
        serde_json::from_str(&run(podman().args(["image", "inspect", image]))).unwrap();
    let config = &inspect[0]["Config"];
    assert_eq!(config["User"], "10001:10001");
    let labels = &config["Labels"];
    assert_eq!(
        labels["io.modelcontextprotocol.server.name"],
        "local.loanhost/loanhost"
    );
    for label in [
        "title", "version", "revision", "created", "licenses", "source",
    ] {
        let key = format!("org.opencontainers.image.{label}");
        assert!(
            labels[&key].as_str().is_some_and(|v| !v.is_empty()),
            "{key}"
        );
    }
    let env: Vec<&str> = config["Env"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        !env.iter().any(|e| e.starts_with("LOANHOST_DEV_IDP")),
        "{env:?}"
    );
    let shell = podman()
        .args([
            "run",
            "--rm",
            "--network",
            "host",
            "--tmpfs",
            "/data",
            "--entrypoint",
            "/bin/sh",
            image,
            "-c",
            "true",
        ])
        .output()
        .unwrap();
    assert!(!shell.status.success(), "the image has a shell");
}

/// The stand-in PostgreSQL and registry images, built once per run.
fn stand_ins() -> &'static (String, String) {
    static IMAGES: OnceLock<(String, String)> = OnceLock::new();
    IMAGES.get_or_init(|| {
        let out = run(Command::new(root().join("scripts/stand-in-images.sh"))
            .env("CONTAINERS_CONF", containers_conf()));
        let _ = podman().args(["image", "prune", "-f"]).output();
        let mut names = out.split_whitespace().map(str::to_string);
        (names.next().unwrap(), names.next().unwrap())
    })
}

/// `podman-compose` (from the test venv) on `deploy/compose.yaml` as project `project`.
fn compose(project: &str, env: &[(String, String)]) -> Command {
    let mut command = Command::new(python().with_file_name("podman-compose"));
    command
        .args(["--podman-args=--storage-driver vfs", "-p", project, "-f"])
        .arg(root().join("deploy/compose.yaml"))
        .env("CONTAINERS_CONF", containers_conf())
        .envs(env.iter().cloned());
    command
}

#[tokio::test]
async fn the_compose_stack_serves_from_two_replicas_follows_a_new_plugin_version_and_leaves_nothing(
) {
    // Arrange: the stack on free ports, PostgreSQL and the registry from the stand-ins.
    let (postgres, registry) = stand_ins();
    let project = format!("loanhost-test-{}", free_port());
    let ports: Vec<u16> = (0..6).map(|_| free_port()).collect();
    let env: Vec<(String, String)> = [
        ("LOANHOST_IMAGE", image().to_string()),
        ("POSTGRES_IMAGE", postgres.clone()),
        ("REGISTRY_IMAGE", registry.clone()),
        ("POSTGRES_PORT", ports[0].to_string()),
        ("REGISTRY_PORT", ports[1].to_string()),
        ("LOANHOST_PORT_1", ports[2].to_string()),
        ("LOANHOST_PORT_2", ports[3].to_string()),
        ("LOANHOST_METRICS_PORT_1", ports[4].to_string()),
        ("LOANHOST_METRICS_PORT_2", ports[5].to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let _down = scopeguard(&project, &env);
    let volumes_before = anonymous_volumes();

    // Act: up; both replicas ready with every tool from the registry.
    run(compose(&project, &env).args(["up", "-d"]));
    let replicas = [(ports[2], ports[4], 1), (ports[3], ports[5], 2)];
    for (_, metrics, _) in replicas {
        let url = format!("http://127.0.0.1:{metrics}/ready");
        for _ in 0..600 {
            if ready(&url).await["tools"] == shipped().len() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    // Assert: each replica answers over the 2,000 imported loans.
    let tokens: Vec<String> = replicas
        .iter()
        .map(|(_, _, n)| token(&format!("{project}_loanhost-{n}_1")))
        .collect();
    for ((port, _, _), token) in replicas.iter().zip(&tokens) {
        let base = format!("http://127.0.0.1:{port}");
        let mut answer = Value::Null;
        // The seed is a one-shot beside the replicas: wait for its import to be committed.
        for _ in 0..600 {
            answer = call(&base, token, "report_loans", json!({"groupBy": "Status"})).await;
            if answer["result"]["structuredContent"]["totalCount"] == 2000 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert_eq!(
            answer["result"]["structuredContent"]["totalCount"], 2000,
            "{answer}"
        );
    }

    // Act: a new version of the metadata tool pushed to the tag the replicas follow.
    let dir = tempfile::tempdir().unwrap();
    let tool = "get_loan_reporting_metadata";
    let (wasm, toml) = (
        dir.path().join(format!("{tool}.wasm")),
        dir.path().join(format!("{tool}.toml")),
    );
    std::fs::write(&wasm, tool_wasm(tool)).unwrap();
    std::fs::write(&toml, format!("{}\n# release 2\n", tool_manifest(tool))).unwrap();
    let reference = format!("oci://127.0.0.1:{}/loanhost/{tool}:live", ports[1]);
    let registry_env = [(
        "LOANHOST_REGISTRY_PLAIN_HTTP",
        format!("127.0.0.1:{}", ports[1]),
    )];
    let (ok, digest, why) = loanhost(
        &[
            "push",
            wasm.to_str().unwrap(),
            toml.to_str().unwrap(),
            &reference,
            "--unsigned",
        ],
        &registry_env,
    )
    .await;
    assert!(ok, "{why}");
    let served = format!(
        "loanhost_plugin_served{{tool=\"{tool}\",source=\"{reference}\",digest=\"{}\"}} 1",
        digest.trim()
    );

    // Assert: both replicas serve it.
    for ((port, metrics, _), token) in replicas.iter().zip(&tokens) {
        let url = format!("http://127.0.0.1:{metrics}/metrics");
        let mut seen = false;
        for _ in 0..3000 {
            let text = reqwest::get(&url).await.unwrap().text().await.unwrap();
            if text.contains(&served) {
                seen = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(seen, "{served} not served by the replica on {port}");
        let answer = call(&format!("http://127.0.0.1:{port}"), token, tool, json!({})).await;
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }

    // Act / Assert: down leaves no container and no volume of the project.
    run(compose(&project, &env).args(["down", "-v"]));
    let label = format!("label=io.podman.compose.project={project}");
    let left = run(podman().args(["ps", "-a", "-q", "--filter", &label]));
    assert_eq!(left.trim(), "", "containers left");
    let volumes = run(podman().args(["volume", "ls", "-q", "--filter", &label]));
    assert_eq!(volumes.trim(), "", "volumes left");
    let new: Vec<String> = anonymous_volumes()
        .into_iter()
        .filter(|v| !volumes_before.contains(v))
        .collect();
    assert!(new.is_empty(), "anonymous volumes left: {new:?}");
}

/// The anonymous volumes podman holds now (the ones a `VOLUME` makes when nothing is mounted).
fn anonymous_volumes() -> Vec<String> {
    let out = run(podman().args(["volume", "ls", "--format", "{{.Name}} {{.Anonymous}}"]));
    out.lines()
        .filter_map(|l| l.strip_suffix(" true"))
        .map(str::to_string)
        .collect()
}

/// Takes the stack down when the test ends, whatever happened.
fn scopeguard(project: &str, env: &[(String, String)]) -> impl Drop {
    struct Down(String, Vec<(String, String)>);
    impl Drop for Down {
        fn drop(&mut self) {
            let _ = compose(&self.0, &self.1).args(["down", "-v"]).output();
        }
    }
    Down(project.to_string(), env.to_vec())
}

/// The manifests of `deploy/kubernetes/` (not the kustomization), as JSON documents.
fn manifests() -> Vec<(PathBuf, Value)> {
    let dir = root().join("deploy/kubernetes");
    let mut out = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .filter(|p| p.file_name().unwrap() != "kustomization.yaml")
        .collect();
    files.sort();
    for file in files {
        let script = "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))";
        let docs = run(Command::new(python()).args(["-c", script]).arg(&file));
        for doc in serde_json::from_str::<Vec<Value>>(&docs).unwrap() {
            out.push((file.clone(), doc));
        }
    }
    out
}

/// Runs `kubernetes-validate --strict` on `files`; (passed, what it printed).
fn validate(files: &[&Path]) -> (bool, String) {
    let out = Command::new(python().with_file_name("kubernetes-validate"))
        .args(["--strict", "--quiet"])
        .args(files)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn the_kubernetes_manifests_pass_the_api_schemas_and_keep_the_hosts_locked_down() {
    // Arrange
    let docs = manifests();
    let files: Vec<&Path> = {
        let mut f: Vec<&Path> = docs.iter().map(|(p, _)| p.as_path()).collect();
        f.dedup();
        f
    };
    let broken = tempfile::tempdir().unwrap();
    let bad = broken.path().join("deployment.yaml");
    let text = std::fs::read_to_string(root().join("deploy/kubernetes/deployment.yaml")).unwrap();
    std::fs::write(
        &bad,
        text.replace("runAsNonRoot: true", "runAsNonRoot: yes-please"),
    )
    .unwrap();

    // Act
    let (passed, report) = validate(&files);
    let (broken_passed, _) = validate(&[bad.as_path()]);

    // Assert: valid, and the validator refuses a broken copy (it checks, it does not shrug).
    assert!(passed, "{report}");
    assert!(!broken_passed, "a broken manifest passed the validator");
    let kind = |k: &str| {
        docs.iter()
            .filter(|(_, d)| d["kind"] == k)
            .map(|(_, d)| d)
            .collect::<Vec<_>>()
    };
    let deployment = kind("Deployment")[0];
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    assert_eq!(deployment["spec"]["replicas"], 2);
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(
        container["securityContext"]["allowPrivilegeEscalation"],
        false
    );
    assert_eq!(
        container["securityContext"]["capabilities"]["drop"],
        json!(["ALL"])
    );
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/health");
    assert_eq!(
        container["readinessProbe"]["httpGet"],
        json!({"path": "/ready", "port": "metrics"})
    );
    assert!(container["resources"]["requests"]["memory"].is_string());
    assert!(container["resources"]["limits"]["memory"].is_string());
    // Plugins from a registry, no shared volume: every volume is the pod's own.
    for volume in pod["volumes"].as_array().unwrap() {
        assert!(
            volume.get("emptyDir").is_some() || volume.get("secret").is_some(),
            "{volume}"
        );
    }
    let config = kind("ConfigMap")[0];
    assert!(config["data"]["LOANHOST_PLUGIN_REFS"]
        .as_str()
        .unwrap()
        .contains("oci://"));
    assert!(config["data"].get("LOANHOST_DEV_IDP").is_none());
    assert!(
        config["data"].get("LOANHOST_DATABASE_URL").is_none(),
        "secrets stay in Secrets"
    );
    assert_eq!(kind("PodDisruptionBudget").len(), 1);
    assert_eq!(kind("Service").len(), 2);
    let kustomization =
        std::fs::read_to_string(root().join("deploy/kubernetes/kustomization.yaml")).unwrap();
    for file in &files {
        let name = file.file_name().unwrap().to_str().unwrap();
        assert!(
            kustomization.contains(name),
            "{name} is not in the kustomization"
        );
    }
}
