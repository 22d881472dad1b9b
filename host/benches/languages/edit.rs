//! Edit-to-served, as a plugin team works: a server serving a plugin folder, `loanhost plugin
//! watch` rebuilding the example's sources into it; once the first build is served, one edit
//! of the source (a message's text, so the code changes) is saved, and the time to the
//! server serving the edited build is taken, split at the moment the build was deployed. The
//! server compiles with its compile cache, whose function cache the first build filled (or an
//! earlier run): the edited build's functions that did not change are reused. The edit is
//! checked served: the tool's error for a filter that is not an object carries the new text.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};

use super::served::{self, Server};

/// The message the edit changes, in both examples.
const MESSAGE: &str = "filter must be an object";

/// One language's loop.
pub struct Edit {
    /// `Python` or `TypeScript`.
    pub language: &'static str,
    /// From `plugin watch`'s start to the first build served.
    pub first: Duration,
    /// From the edit's save to the edited build deployed (`plugin watch` noticing the save and
    /// building).
    pub built: Duration,
    /// From the edit's save to the edited build served (the server noticing, compiling,
    /// loading).
    pub served: Duration,
    /// The edited build's functions reused from the function cache, and compiled.
    pub functions: (f64, f64),
}

/// A `plugin watch` process, killed when dropped.
struct Watch(Child);

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The loop for `example` (plugins/examples/<language>/report_loans) on a server over `db`
/// with the compile cache `cache`; `scratch` holds the copy of the sources and the plugin
/// folder, `logs` the processes' logs.
pub async fn edit_to_served(
    client: &reqwest::Client,
    language: &'static str,
    example: &Path,
    db: &Path,
    cache: &Path,
    scratch: &Path,
    logs: &Path,
) -> Edit {
    // Arrange: a copy of the example's sources (as a team's own folder), an empty plugin
    // folder, its server, and the watch deploying into it.
    let work = scratch.join(format!("edit-{language}"));
    let source = work.join("report_loans");
    let code = super::copy_example(example, "report_loans", &source);
    let deploy = work.join("plugins");
    std::fs::create_dir_all(&deploy).unwrap();
    // The server is ready once it serves a tool: the watch deploys first.
    let started = Instant::now();
    let _watch = Watch(
        Command::new(env!("CARGO_BIN_EXE_loanhost"))
            .args(["plugin", "watch"])
            .arg(&source)
            .arg("--deploy")
            .arg(&deploy)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(logs.join(format!("watch-{language}.log"))).unwrap())
            .spawn()
            .unwrap(),
    );
    let log = logs.join(format!("edit-{language}.log"));
    let server = served::loanhost(client, db, &deploy, cache, &log, served::Setup::Lifted).await;
    let before = served_digest(client, &server, None).await;
    let first = started.elapsed();
    let said = message(client, &server).await;
    assert!(
        said.contains(MESSAGE) && !said.contains("(edited)"),
        "{language}: {said}"
    );
    let counts = |m: &str| {
        let kind = |k: &str| {
            served::sample(
                m,
                &format!("loanhost_plugin_compiled_functions_total{{kind=\"{k}\"}}"),
            )
            .unwrap_or(0.0)
        };
        (kind("reused"), kind("compiled"))
    };
    let (reused, compiled) = counts(&served::metrics(client, &server).await);
    let wasm = deploy.join("report_loans.wasm");
    let deployed_at = modified(&wasm);

    // Act: the edit, saved; then the deploy and the server serving it.
    let edited = format!("{MESSAGE} (edited)");
    let text = std::fs::read_to_string(&code).unwrap();
    assert!(text.contains(MESSAGE), "{}: {MESSAGE}", code.display());
    std::fs::write(&code, text.replace(MESSAGE, &edited)).unwrap();
    let saved = Instant::now();
    let built = loop {
        if modified(&wasm) != deployed_at {
            break saved.elapsed();
        }
        assert!(
            saved.elapsed() < Duration::from_secs(600),
            "{language}: never deployed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    served_digest(client, &server, Some(&before)).await;
    let served_in = saved.elapsed();

    // Assert: the edited build answers.
    let said = message(client, &server).await;
    assert!(said.contains(&edited), "{language}: {said}");
    let (reused_after, compiled_after) = counts(&served::metrics(client, &server).await);
    Edit {
        language,
        first,
        built,
        served: served_in,
        functions: (reused_after - reused, compiled_after - compiled),
    }
}

/// When `path` was last modified (`None` while it does not exist).
fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Waits until the server serves `report_loans` with a digest other than `other` (any, when
/// `None`), and returns it: the `loanhost_plugin_served` gauge, read every 10 ms.
async fn served_digest(client: &reqwest::Client, server: &Server, other: Option<&str>) -> String {
    let prefix = "loanhost_plugin_served{tool=\"report_loans\",source=\"folder\",digest=\"";
    let until = Instant::now() + Duration::from_secs(600);
    loop {
        let metrics = served::metrics(client, server).await;
        let digest = metrics.lines().find_map(|l| {
            let (digest, value) = l.strip_prefix(prefix)?.split_once("\"} ")?;
            (value.trim() == "1").then(|| digest.to_string())
        });
        if let Some(digest) = digest.filter(|d| Some(d.as_str()) != other) {
            return digest;
        }
        assert!(Instant::now() < until, "the build was never served");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The served tool's message for a filter that is not an object.
async fn message(client: &reqwest::Client, server: &Server) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "report_loans", "arguments": {"groupBy": "Status", "metric": "Count", "filter": 3}}});
    let reply: Value = served::post(client, server, &body).await.unwrap();
    reply["error"]["message"]
        .as_str()
        .or_else(|| reply["result"]["content"][0]["text"].as_str())
        .unwrap_or_else(|| panic!("{reply}"))
        .to_string()
}

/// The table.
pub fn print(rows: &[Edit]) {
    println!("\n## Edit to served (plugin watch, a server with its compile cache)\n");
    println!("| plugin | first build served | edit to deployed | edit to served | functions reused / compiled |");
    println!("|---|---:|---:|---:|---:|");
    for r in rows {
        println!(
            "| {} | {:.1} s | {:.1} s | **{:.1} s** | {:.0} / {:.0} |",
            r.language,
            r.first.as_secs_f64(),
            r.built.as_secs_f64(),
            r.served.as_secs_f64(),
            r.functions.0,
            r.functions.1
        );
    }
}
