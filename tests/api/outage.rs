//! A database outage under load: a PostgreSQL server of this test's own (its own data
//! directory and port, so no other test is disturbed) is stopped and started again while
//! callers keep calling. Requests in the gap get `503` (never `401`), and service resumes
//! within 5 s of the database's return without restarting the host. And a connection the
//! database dropped while it sat in the report pool costs the next report nothing.

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::helpers::{spawn_app_with, tool_manifest, tool_wasm, AppOptions};

/// A PostgreSQL server in a temporary directory, on a free loopback port.
struct PrivatePostgres {
    bin: PathBuf,
    data: PathBuf,
    socket_dir: PathBuf,
    port: u16,
    _dir: tempfile::TempDir,
}

impl PrivatePostgres {
    /// `cmd` as the `postgres` user when we are root (PostgreSQL refuses to run as root).
    fn run(&self, tool: &str, args: &[&str]) {
        let program = self.bin.join(tool);
        let output = if unsafe_is_root() {
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(&program)
                .args(args)
                .output()
        } else {
            Command::new(&program).args(args).output()
        }
        .unwrap_or_else(|e| panic!("running {}: {e}", program.display()));
        assert!(
            output.status.success(),
            "{tool} {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    fn init() -> PrivatePostgres {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .expect("PostgreSQL is installed (scripts/postgres.sh)")
            .map(|e| e.unwrap().path().join("bin"))
            .filter(|p| p.join("initdb").exists())
            .max()
            .expect("an initdb under /usr/lib/postgresql");
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let socket_dir = dir.path().to_path_buf();
        if unsafe_is_root() {
            let status = Command::new("chown")
                .args(["postgres:", &dir.path().display().to_string()])
                .status()
                .unwrap();
            assert!(status.success());
        }
        let port = crate::helpers::free_port();
        let pg = PrivatePostgres {
            bin,
            data,
            socket_dir,
            port,
            _dir: dir,
        };
        pg.run(
            "initdb",
            &[
                "-D",
                &pg.data.display().to_string(),
                "-A",
                "trust",
                "-U",
                "loanhost",
                "--no-sync",
            ],
        );
        pg
    }

    fn start(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.socket_dir.display()
        );
        self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data.display().to_string(),
                "-o",
                &options,
                "-l",
                &self.socket_dir.join("log").display().to_string(),
                "-w",
                "start",
            ],
        );
    }

    fn stop(&self) {
        self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data.display().to_string(),
                "-m",
                "fast",
                "-w",
                "stop",
            ],
        );
    }

    fn url(&self) -> String {
        format!("postgres://loanhost@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let _ = Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(self.bin.join("pg_ctl"))
            .args([
                "-D",
                &self.data.display().to_string(),
                "-m",
                "immediate",
                "stop",
            ])
            .output();
    }
}

fn unsafe_is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

#[tokio::test]
async fn a_database_outage_answers_503_and_service_resumes_by_itself() {
    // Arrange: the host on a private PostgreSQL; two callers call continuously (a report on
    // the report pool, a tools/list that only needs the identity pool).
    let pg = tokio::task::spawn_blocking(|| {
        let pg = PrivatePostgres::init();
        pg.start();
        pg
    })
    .await
    .unwrap();
    let mut options = AppOptions::default().plugin(
        "report_loans",
        tool_wasm("report_loans"),
        tool_manifest("report_loans"),
    );
    options.env.push(("LOANHOST_DATABASE_URL", pg.url()));
    let app = Arc::new(spawn_app_with(options).await);
    let log: Arc<Mutex<Vec<(Instant, u16)>>> = Arc::default();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut callers = Vec::new();
    for (token, body) in [
        (
            "agent-token",
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "report_loans", "arguments": {"groupBy": "Status"}}}),
        ),
        (
            "admin-token",
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        ),
    ] {
        let (app, log, stop) = (app.clone(), log.clone(), stop.clone());
        callers.push(tokio::spawn(async move {
            let deadline = Instant::now() + Duration::from_secs(60);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) && Instant::now() < deadline {
                let status = app.post_mcp(Some(token), &body).await.status().as_u16();
                log.lock().unwrap().push((Instant::now(), status));
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs(1)).await;

    // Act: stop the database for 5 s, start it again, watch 6 s more.
    let pg = tokio::task::spawn_blocking(move || {
        pg.stop();
        pg
    })
    .await
    .unwrap();
    let stopped = Instant::now();
    tokio::time::sleep(Duration::from_secs(5)).await;
    // The database answers again before `start` returns: the outage ends when it is asked to.
    let restarting = Instant::now();
    let pg = tokio::task::spawn_blocking(move || {
        pg.start();
        pg
    })
    .await
    .unwrap();
    let restarted = Instant::now();
    tokio::time::sleep(Duration::from_secs(6)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for c in callers {
        c.await.unwrap();
    }
    drop(pg);

    // Assert
    let log = log.lock().unwrap();
    let statuses: Vec<u16> = log.iter().map(|(_, s)| *s).collect();
    assert!(
        !statuses.contains(&401),
        "an outage must never look like bad credentials: {statuses:?}"
    );
    let in_gap: Vec<u16> = log
        .iter()
        .filter(|(t, _)| *t > stopped + Duration::from_millis(500) && *t < restarting)
        .map(|(_, s)| *s)
        .collect();
    assert!(!in_gap.is_empty(), "no request completed during the outage");
    assert!(
        in_gap.iter().all(|s| *s == 503),
        "during the outage: {in_gap:?}"
    );
    let resumed = log
        .iter()
        .filter(|(t, _)| *t > restarted)
        .find(|(_, s)| *s == 200)
        .map(|(t, _)| t.duration_since(restarted))
        .expect("service never resumed");
    eprintln!(
        "outage: {} requests, {} in the gap (all 503), service resumed {resumed:?} after the database",
        statuses.len(),
        in_gap.len()
    );
    assert!(
        resumed < Duration::from_secs(5),
        "resumed after {resumed:?}"
    );
    let late: Vec<u16> = log
        .iter()
        .filter(|(t, _)| *t > restarted + Duration::from_secs(5))
        .map(|(_, s)| *s)
        .collect();
    assert!(
        !late.is_empty() && late.iter().all(|s| *s == 200),
        "{late:?}"
    );
    assert!(
        statuses.iter().all(|s| [200, 503].contains(s)),
        "{statuses:?}"
    );
}

#[tokio::test]
async fn a_report_runs_again_on_a_fresh_connection_when_its_pooled_one_was_dropped() {
    // Arrange: one report, so the report pool holds an open connection; then PostgreSQL ends
    // every other session on the database (as a restart or an idle timeout on a proxy would).
    let app = spawn_app_with(AppOptions {
        postgres: true,
        ..AppOptions::default().plugin(
            "report_loans",
            tool_wasm("report_loans"),
            tool_manifest("report_loans"),
        )
    })
    .await;
    app.call_ok("agent-token", "report_loans", json!({"groupBy": "Status"}))
        .await;
    let loanhost::data::Db::Postgres(pool) = &app.db else {
        unreachable!("a PostgreSQL app")
    };
    let mut admin = pool.acquire().await.unwrap();
    let pids: Vec<i32> = sqlx::query_scalar(
        // The server's own sessions: not an autovacuum worker that happens to be on the
        // fresh database (a superuser's process, which no test may end).
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() \
         AND backend_type = 'client backend' AND usename = current_user",
    )
    .fetch_all(&mut *admin)
    .await
    .unwrap();
    assert!(!pids.is_empty(), "the report pool had a session to end");
    sqlx::query("SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS t(pid)")
        .bind(&pids)
        .execute(&mut *admin)
        .await
        .unwrap();
    let gone = Instant::now() + Duration::from_secs(5);
    while sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM pg_stat_activity WHERE pid = ANY($1)")
        .bind(&pids)
        .fetch_one(&mut *admin)
        .await
        .unwrap()
        > 0
    {
        assert!(Instant::now() < gone, "the sessions did not end");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(admin);

    // Act: the next reports, at once.
    let first = app
        .call_tool("agent-token", "report_loans", json!({"groupBy": "Status"}))
        .await;
    let second = app
        .call_tool("admin-token", "report_loans", json!({"groupBy": "Status"}))
        .await;

    // Assert: answered, not "the data store could not run the query".
    assert_eq!(first["isError"], false, "{first}");
    assert_eq!(second["isError"], false, "{second}");
}
