//! `docs/plugins.md` run as written: its `<!-- guide: setup -->` block (which sets every
//! variable the guide uses; this test exports the values the reader would pick: the clone,
//! this build's binary, a scratch folder, the test server's plugin directory), then its
//! `<!-- guide: build -->` blocks (scaffold outside the project, build, check, run on fixtures,
//! the crate's own tests, keygen, sign), a real `loanhost serve` that trusts the new key and
//! requires signatures, its `<!-- guide: deploy -->` blocks into that server's plugin
//! directory, and a call over MCP; then its `<!-- guide: publish -->` block against the
//! reference registry. The blocks run verbatim, with `PATH` left as it is.

use loanhost_tests as kit;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

/// The guide's shell blocks tagged `<!-- guide: {tag} -->`, in order.
fn blocks(tag: &str) -> String {
    let text = std::fs::read_to_string(kit::root().join("docs/plugins.md")).unwrap();
    let marker = format!("<!-- guide: {tag} -->");
    let mut out = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() == marker {
            assert_eq!(
                lines.next().map(str::trim),
                Some("```sh"),
                "a ```sh block follows {marker}"
            );
            for l in lines.by_ref() {
                if l.trim() == "```" {
                    break;
                }
                out.push_str(l);
                out.push('\n');
            }
        }
    }
    assert!(!out.is_empty(), "no `{tag}` blocks in docs/plugins.md");
    out
}

/// Runs the guide's setup block, then `script`, with bash (`set -euo pipefail`): `SRC` is
/// this clone and `LOANHOST` this build's binary, as a reader would set them.
fn bash(script: &str, env: &[(&str, &Path)]) -> String {
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(format!("set -euo pipefail\n{}\n{script}", blocks("setup")))
        .env("SRC", kit::root())
        .env("LOANHOST", env!("CARGO_BIN_EXE_loanhost"))
        .env("RUST_LOG", "warn")
        // The guide's own `cargo test` builds natively, beside (not inside) this run's target.
        .env(
            "CARGO_TARGET_DIR",
            Path::new(&std::env::var("HOME").unwrap_or_default())
                .join(".cache/loanhost/guide-target"),
        );
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "the guide's commands failed:\n{script}\n--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test]
async fn the_plugin_guide_runs_from_scaffold_to_a_signed_tool_served_over_mcp() {
    // Arrange + Act: the guide's build steps, in a plugin team's own directory.
    let work = tempfile::tempdir().unwrap();
    let printed = bash(&blocks("build"), &[("WORK", work.path())]);

    // The run on fixtures printed the result; keygen printed the public key.
    let public = public_key(&work.path().join("keys"));
    assert!(printed.contains("\"buckets\""), "{printed}");
    assert!(printed.contains(&public), "{printed}");
    // A compiled Rust plugin is bounds-checked in code (decision 0044).
    assert!(
        printed.contains("\"memoryAccess\": \"bounds checks\""),
        "{printed}"
    );

    // Act + Assert: deployed to a server that requires signatures, and called over MCP.
    serve_deploy_and_call(work.path(), &public, "deploy", "my_report", false).await;

    // Act: published to the reference registry, checked from it, pulled back by digest.
    let (_registry, host) = kit::registry(work.path()).await;
    let registry = Path::new(&host);
    bash(
        &blocks("publish"),
        &[
            ("WORK", work.path()),
            ("REGISTRY", registry),
            ("LOANHOST_REGISTRY_PLAIN_HTTP", registry),
        ],
    );

    // Assert: the same signed files came back.
    for file in [
        "my_report.wasm",
        "my_report.toml",
        "my_report.wasm.minisig",
        "my_report.toml.minisig",
    ] {
        assert_eq!(
            std::fs::read(work.path().join("pulled").join(file)).unwrap(),
            std::fs::read(work.path().join("build").join(file)).unwrap(),
            "{file}"
        );
    }
}

#[tokio::test]
async fn the_guides_view_path_previews_signs_and_serves_a_view() {
    // Arrange + Act: scaffold with a view, build, check, run with a preview, sign all three.
    let work = tempfile::tempdir().unwrap();
    let printed = bash(&blocks("view"), &[("WORK", work.path())]);
    assert!(
        printed.contains("\"uri\": \"ui://loanhost/my_chart\""),
        "plugin check prints the view: {printed}"
    );
    let preview = std::fs::read_to_string(work.path().join("my_chart-preview.html")).unwrap();
    assert!(preview.contains("<iframe sandbox=\"allow-scripts\""));
    assert!(preview.contains("\"structuredContent\":{\"buckets\":["));
    assert!(preview.contains("const theme = \"dark\";"));

    // Act + Assert: deployed signed to a server that requires signatures; called, and its
    // view read.
    let public = public_key(&work.path().join("keys-view"));
    serve_deploy_and_call(work.path(), &public, "view-deploy", "my_chart", true).await;
}

#[tokio::test]
async fn the_guides_python_path_runs_to_a_signed_tool_served_over_mcp() {
    // Arrange + Act: scaffold, unit tests, build, check, run on fixtures, sign, in Python.
    let work = tempfile::tempdir().unwrap();
    let printed = bash(&blocks("python"), &[("WORK", work.path())]);
    assert!(printed.contains("\"Loan Open\""), "{printed}");
    assert!(printed.contains("\"coreInstances\": 38"), "{printed}");
    // A language runtime's snapshot runs with guard pages (decision 0044).
    assert!(
        printed.contains("\"memoryAccess\": \"guard pages\""),
        "{printed}"
    );
    // `plugin check` says which version of the WIT the component targets.
    assert!(printed.contains("\"witVersion\": \"1.2.0\""), "{printed}");

    // A build that still imports WASI (componentize-py without --stub-wasi) is refused, and
    // the message names the flag.
    let refused = bash(
        r#"mkdir -p "$WORK/wasi"
eval "$("$SRC/scripts/plugin-toolchain.sh" python)"
"$(dirname "$PLUGIN_PY")/componentize-py" -d "$SRC/wit/loan-reporting@1.2.0" -w reporting-tool \
  componentize plugin -p "$WORK/my_report_py" -p "$SRC/plugins/sdk-python" -o "$WORK/wasi/my_report_py.wasm" >/dev/null
cp "$WORK/my_report_py/my_report_py.toml" "$WORK/wasi/"
"$LOANHOST" plugin check "$WORK/wasi/my_report_py.wasm" "$WORK/wasi/my_report_py.toml" 2>&1 || true"#,
        &[("WORK", work.path())],
    );
    assert!(
        refused.contains("imports `wasi:") && refused.contains("--stub-wasi"),
        "{refused}"
    );

    // Act + Assert
    let public = public_key(&work.path().join("keys-py"));
    serve_deploy_and_call(work.path(), &public, "python-deploy", "my_report_py", false).await;
}

#[tokio::test]
async fn the_guides_typescript_path_runs_to_a_signed_tool_served_over_mcp() {
    // Arrange + Act: scaffold, unit tests, build, check, run on fixtures, sign, in TypeScript.
    let work = tempfile::tempdir().unwrap();
    let printed = bash(&blocks("typescript"), &[("WORK", work.path())]);
    assert!(printed.contains("\"Loan Open\""), "{printed}");
    assert!(printed.contains("\"witVersion\": \"1.2.0\""), "{printed}");
    assert!(
        printed.contains("\"memoryAccess\": \"guard pages\""),
        "{printed}"
    );

    // Act + Assert
    let public = public_key(&work.path().join("keys-ts"));
    serve_deploy_and_call(
        work.path(),
        &public,
        "typescript-deploy",
        "my_report_ts",
        false,
    )
    .await;
}

/// The public key `plugin keygen` wrote into `dir` (its last line).
fn public_key(dir: &Path) -> String {
    let public = std::fs::read_to_string(dir.join("loanhost.pub")).unwrap();
    public.lines().last().unwrap().trim().to_string()
}

/// Starts a real `loanhost serve` that requires signatures and trusts `public`, runs the
/// guide's `deploy_tag` blocks into its plugin directory, and calls `tool` over MCP as the
/// demo agent: the answer counts only `Loan Open` loans. With `view`, the tool's view is read
/// too.
async fn serve_deploy_and_call(
    work: &Path,
    public: &str,
    deploy_tag: &str,
    tool: &'static str,
    view: bool,
) {
    // A server that requires signatures and trusts the new key.
    let server = tempfile::tempdir().unwrap();
    let plugin_dir = server.path().join("plugins");
    std::fs::create_dir(&plugin_dir).unwrap();
    let port = kit::free_port();
    let base = format!("http://127.0.0.1:{port}");
    let db = format!("sqlite://{}", server.path().join("db.sqlite").display());
    let env = |cmd: &mut Command| {
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            // The reloader's `plugin loaded` line is the signal the call waits for.
            .env("RUST_LOG", "warn,loanhost::plugins::catalog::reload=info")
            .env("LOANHOST_LISTEN", format!("127.0.0.1:{port}"))
            .env("LOANHOST_BASE_URL", &base)
            .env("LOANHOST_DATABASE_URL", &db)
            .env("LOANHOST_PLUGIN_DIR", &plugin_dir)
            .env("LOANHOST_CACHE_DIR", server.path().join("cache"))
            .env("LOANHOST_DEV_IDP", "true")
            .env("LOANHOST_AUDIT_LOG", "off")
            .env("LOANHOST_REQUIRE_SIGNED_PLUGINS", "true")
            .env("LOANHOST_TRUSTED_KEYS", public);
    };
    let loanhost = env!("CARGO_BIN_EXE_loanhost");
    // The server's data: the same seeded demo users.
    let mut seed = Command::new(loanhost);
    env(&mut seed);
    let seeded = seed
        .args(["seed", "--loans", "200", "--import"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(seeded.success());
    let mut serve = Command::new(loanhost);
    env(&mut serve);
    let log = server.path().join("serve.log");
    let mut child = serve
        .arg("serve")
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
        .spawn()
        .unwrap();
    kit::wait_until_serving(&base, &mut child, &log).await;
    let client = reqwest::Client::new();

    // Act: the guide's deploy step, then a call over MCP.
    bash(
        &blocks(deploy_tag),
        &[("WORK", work), ("PLUGIN_DIR", &plugin_dir)],
    );
    let mut token = Command::new(loanhost);
    env(&mut token);
    let token = String::from_utf8(
        token
            .args(["token", "--email", "agent@demo.loanhost.local"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .to_string();
    let call = |name: &'static str| {
        let (client, base, token) = (client.clone(), base.clone(), token.clone());
        async move {
            client
                .post(format!("{base}/mcp"))
                .bearer_auth(token)
                .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": {"statuses": ["Loan Open"]}}}))
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        }
    };
    // The reloader picks the files up within a second; a Python or JavaScript component then
    // takes 20 s or more to compile on a small machine (far more with both cores busy). The
    // call waits for the reloader's own line, never spending the caller's budgets on polls.
    kit::wait_for_log_line(
        &log,
        &["plugin loaded", &format!("plugin={tool}")],
        &mut child,
    )
    .await;
    let reply = call(tool).await;
    let read = client
        .post(format!("{base}/mcp"))
        .bearer_auth(&token)
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": format!("ui://loanhost/{tool}")}}))
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    if view {
        let content = &read["result"]["contents"][0];
        assert_eq!(content["mimeType"], "text/html;profile=mcp-app", "{read}");
        assert!(content["text"]
            .as_str()
            .unwrap()
            .contains("Content-Security-Policy"));
    } else {
        assert_eq!(read["error"]["code"], -32602, "{read}");
    }

    // Assert
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    let buckets = reply["result"]["structuredContent"]["buckets"]
        .as_array()
        .unwrap();
    assert!(
        buckets.iter().all(|b| b["status"] == "Loan Open"),
        "{reply}"
    );
}

#[tokio::test]
async fn plugin_watch_rebuilds_and_redeploys_on_save() {
    // Arrange: a scaffolded crate and an empty plugin directory.
    let work = tempfile::tempdir().unwrap();
    bash(
        "\"$LOANHOST\" plugin new watched --dir \"$WORK\" --sdk \"$SRC/plugins/sdk\"",
        &[("WORK", work.path())],
    );
    let krate = work.path().join("watched");
    let deploy = work.path().join("deploy");
    std::fs::create_dir(&deploy).unwrap();
    // A signature left from an earlier, signed deploy: it would not match the new build.
    std::fs::write(deploy.join("watched.wasm.minisig"), "stale").unwrap();
    let mut watch = tokio::process::Command::new(env!("CARGO_BIN_EXE_loanhost"))
        .args(["plugin", "watch"])
        .arg(&krate)
        .arg("--deploy")
        .arg(&deploy)
        .args(["--rounds", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let wasm = deploy.join("watched.wasm");
    let mut first = None;
    for _ in 0..1200 {
        if let Ok(bytes) = std::fs::read(&wasm) {
            first = Some(bytes);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let first = first.expect("the first build was deployed within 2 minutes");
    assert!(deploy.join("watched.toml").exists());
    assert!(
        !deploy.join("watched.wasm.minisig").exists(),
        "an unsigned deploy removes the stale signature"
    );

    // Act: save a change.
    let lib = krate.join("src/lib.rs");
    let text = std::fs::read_to_string(&lib).unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await; // a later mtime on coarse clocks
    std::fs::write(
        &lib,
        text.replace(
            "Counts the caller's loans",
            "Counts, freshly, the caller's loans",
        ),
    )
    .unwrap();
    let status = tokio::time::timeout(Duration::from_secs(120), watch.wait())
        .await
        .expect("the second build finished within 2 minutes")
        .unwrap();

    // Assert
    assert!(status.success());
    let second = std::fs::read(&wasm).unwrap();
    assert_ne!(first, second, "the rebuilt component was deployed");
    assert!(String::from_utf8_lossy(&second).contains("freshly"));
}

#[tokio::test]
async fn the_token_command_signs_with_the_servers_key_or_says_where_it_looked() {
    // Arrange: a server started in its folder with the default relative paths, as `make run`
    // starts one in the clone.
    let clone = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::create_dir(clone.path().join("plugins")).unwrap();
    let port = kit::free_port();
    let base = format!("http://127.0.0.1:{port}");
    let loanhost = env!("CARGO_BIN_EXE_loanhost");
    let in_dir = |dir: &Path, args: &[&str]| {
        let mut c = Command::new(loanhost);
        c.args(args)
            .current_dir(dir)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("RUST_LOG", "warn")
            .env("LOANHOST_BASE_URL", &base)
            .env("LOANHOST_PLUGIN_DIR", "plugins")
            .env("LOANHOST_DEV_IDP", "true");
        c
    };
    let seeded = in_dir(clone.path(), &["seed", "--loans", "50", "--import"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(seeded.success());
    let log = clone.path().join("serve.log");
    let mut child = in_dir(clone.path(), &["serve"])
        .env("LOANHOST_LISTEN", format!("127.0.0.1:{port}"))
        .env("LOANHOST_AUDIT_LOG", "off")
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
        .spawn()
        .unwrap();
    kit::wait_until_serving(&base, &mut child, &log).await;

    // Act: the banner's command from another folder; the bare command there; an unknown email.
    let banner = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "cd {} && {loanhost} token --email agent@demo.loanhost.local",
            clone.path().display()
        ))
        .current_dir(elsewhere.path())
        .env("LOANHOST_BASE_URL", &base)
        .env("LOANHOST_DEV_IDP", "true")
        .output()
        .unwrap();
    let bare = in_dir(
        elsewhere.path(),
        &["token", "--email", "agent@demo.loanhost.local"],
    )
    .output()
    .unwrap();
    let unknown = in_dir(clone.path(), &["token", "--email", "nobody@example.com"])
        .output()
        .unwrap();
    let token = String::from_utf8(banner.stdout).unwrap().trim().to_string();
    let status = reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .bearer_auth(&token)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap()
        .status();
    let _ = child.kill();
    let _ = child.wait();

    // Assert
    assert_eq!(status, 200, "the server accepts the banner's token");
    assert!(!bare.status.success(), "no key here: no token");
    let said = String::from_utf8_lossy(&bare.stderr);
    let looked = elsewhere.path().join("data/cache/dev-idp-rsa.pem");
    assert!(
        said.contains(&format!("no dev IdP key at {}", looked.display())),
        "{said}"
    );
    assert!(!looked.exists(), "the command created no key of its own");
    assert!(unknown.status.success());
    let warned = String::from_utf8_lossy(&unknown.stderr);
    assert!(
        warned.contains("warning: nobody@example.com is not an active agent"),
        "{warned}"
    );
}
