//! The benchmarks' full data set: `BENCH_LOANS` seeded loans (default 1,000,000) with their
//! LOS history, the warehouse tables and the loan applications, imported once into a cached SQLite file
//! (`~/.cache/loanhost/bench/full-<N>.db`) and, when `BENCH_POSTGRES_URL` names a server, a
//! cached PostgreSQL database (`loanhost_bench_full_<N>`).

use std::path::PathBuf;
use std::time::Instant;

use loanhost::data::Db;

/// "Today" of the seeded data and of the servers that serve it.
pub const TODAY: &str = "2026-11-22";

pub fn loans() -> u64 {
    std::env::var("BENCH_LOANS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

pub fn bench_dir() -> PathBuf {
    PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/loanhost/bench")
}

/// The benchmark databases: SQLite always, PostgreSQL when `BENCH_POSTGRES_URL` is set.
pub async fn engines(n: u64) -> Vec<(&'static str, String)> {
    let dir = bench_dir();
    let mut out = vec![(
        "sqlite",
        format!("sqlite://{}", dir.join(format!("full-{n}.db")).display()),
    )];
    if let Ok(url) = std::env::var("BENCH_POSTGRES_URL") {
        let name = format!("loanhost_bench_full_{n}");
        let admin = sqlx::PgPool::connect(&url).await.unwrap();
        let exists: Option<i32> =
            sqlx::query_scalar("SELECT 1 FROM pg_database WHERE datname = $1")
                .bind(&name)
                .fetch_optional(&admin)
                .await
                .unwrap();
        if exists.is_none() {
            sqlx::query(&format!("CREATE DATABASE {name}"))
                .execute(&admin)
                .await
                .unwrap();
        }
        let base = url.rsplit_once('/').unwrap().0;
        out.push(("postgres", format!("{base}/{name}")));
    }
    out
}

/// Seeds and imports the full data set once (agents, loans, LOS history, warehouse).
pub async fn prepare(db: &Db, n: u64) {
    let count: i64 = match db {
        Db::Sqlite(p) => {
            sqlx::query_scalar("SELECT COUNT(*) FROM loans")
                .fetch_one(p)
                .await
        }
        Db::Postgres(p) => {
            sqlx::query_scalar("SELECT COUNT(*) FROM loans")
                .fetch_one(p)
                .await
        }
    }
    .unwrap();
    // A database imported before schema v21 has its loans but no applications (one loan in
    // ten has one): it is imported again, from a seed folder written anew if it lacks them.
    let applications_sql = "SELECT COUNT(*) FROM loan_applications";
    let applications: i64 = match db {
        Db::Sqlite(p) => sqlx::query_scalar(applications_sql).fetch_one(p).await,
        Db::Postgres(p) => sqlx::query_scalar(applications_sql).fetch_one(p).await,
    }
    .unwrap();
    if count == n as i64 && (applications > 0 || n < 10) {
        return;
    }
    let seed_dir = bench_dir().join(format!("full-seed-{n}"));
    // Written once the seed has written every file (an interrupted seed leaves none): a
    // folder that has it is whole and of this schema.
    let whole = seed_dir.join(".complete-v21");
    if !whole.exists() {
        let spec = loanhost::data::seed::SeedSpec {
            loans: n,
            seed: 1,
            today: loanhost::config::parse_date(TODAY).unwrap(),
        };
        loanhost::data::seed::write_dir(spec, &seed_dir).unwrap();
        std::fs::write(&whole, b"").unwrap();
    }
    let started = Instant::now();
    loanhost::data::import::import_dir(db, &seed_dir, |f, r| eprintln!("  {f}: {r}"))
        .await
        .unwrap();
    eprintln!(
        "imported {n} loans with their history into {} in {:.0} s",
        db.engine(),
        started.elapsed().as_secs_f64()
    );
}

/// A host on loopback serving the full data set of `db_url` (imported first when needed),
/// with what a benchmark needs beside it: a raw-SQL reference pool on the same database, the
/// dev IdP's key and the claims its tokens carry.
pub struct Served {
    /// The reference's own pool: like the host's report connections, it hands connections out
    /// without a ping (sqlx's default pings each one, a round trip per statement).
    pub raw: Db,
    /// The host's own pool (directory lookups).
    pub db: Db,
    pub server: tokio::task::JoinHandle<std::io::Result<()>>,
    /// The `/mcp` URL.
    pub url: String,
    key: loanhost::oauth::devidp::SigningKey,
    issuer: String,
    audience: String,
}

impl Served {
    /// Starts a host on a free port with the plugins of `plugins/dist`, "today" at [`TODAY`].
    pub fn start(rt: &tokio::runtime::Runtime, db_url: String, n: u64) -> Served {
        let port = super::free_port();
        let plugin_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../plugins/dist");
        let raw = rt.block_on(Db::open_reference(&db_url)).unwrap();
        let mut env = super::server_env(port, db_url, &plugin_dir, &bench_dir().join("cache"));
        env.insert("LOANHOST_TODAY".into(), TODAY.into());
        let config = loanhost::config::Config::from_map(&env).unwrap();
        let (issuer, audience) = (config.idp.issuer.clone(), config.mcp_audience.clone());
        let key = loanhost::oauth::devidp::SigningKey::load_or_create(
            &loanhost::app::dev_idp_key_path(&config),
        )
        .unwrap();
        let (db, server) = rt.block_on(async {
            let app = loanhost::app::Application::build(config)
                .await
                .expect("run `make plugins` first");
            let db = app.db();
            prepare(&db, n).await;
            (db, tokio::spawn(app.run_until_stopped()))
        });
        Served {
            raw,
            db,
            server,
            url: format!("http://127.0.0.1:{port}/mcp"),
            key,
            issuer,
            audience,
        }
    }

    /// An access token for the platform user `email`, valid for `ttl`.
    pub fn token(&self, email: &str, ttl: std::time::Duration) -> String {
        self.key
            .mint(&self.issuer, email, &self.audience, "", ttl)
            .unwrap()
    }
}
