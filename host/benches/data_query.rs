//! A grouped aggregate (count and exact sum of the loan amount by status) over a seeded data
//! set of `BENCH_LOANS` loans (default 1,000,000), for an Admin (every loan) and for a single
//! Agent (their own loans, through the officer/assistant/referrer indexes), on SQLite and, when
//! `BENCH_POSTGRES_URL` names a server, on PostgreSQL. Runs the host's query compiler and the
//! caller scope exactly as the `data` capability does. The seeded databases are cached in
//! `~/.cache/loanhost/bench/` (and in the `loanhost_bench` PostgreSQL database).

mod common;

use std::path::PathBuf;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};
use loanhost::data::catalog::Dataset;
use loanhost::data::query::{self, Aggregate, Key, Query};
use loanhost::data::scope::Scope;
use loanhost::data::Db;

fn loans() -> u64 {
    std::env::var("BENCH_LOANS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

async fn count(db: &Db) -> i64 {
    let sql = "SELECT COUNT(*) FROM loans";
    match db {
        Db::Sqlite(p) => sqlx::query_scalar(sql).fetch_one(p).await.unwrap(),
        Db::Postgres(p) => sqlx::query_scalar(sql).fetch_one(p).await.unwrap(),
    }
}

/// Opens (and seeds once) the benchmark database at `url`.
async fn prepared(url: &str) -> Db {
    let db = Db::open(url).await.expect("opening the benchmark database");
    let n = loans();
    if count(&db).await != n as i64 {
        // The same seed files as `http_reports` (same size, seed and day): written once.
        let dir = cache().join(format!("full-seed-{n}"));
        if !dir.join("dw_deals.jsonl").exists() {
            let started = Instant::now();
            let today = time::macros::date!(2026 - 11 - 22);
            loanhost::data::seed::write_dir(
                loanhost::data::seed::SeedSpec {
                    loans: n,
                    seed: 1,
                    today,
                },
                &dir,
            )
            .unwrap();
            eprintln!(
                "seeded {n} loans in {:.1} s",
                started.elapsed().as_secs_f64()
            );
        }
        // The query reads loans only: import agents and loans (not the history files).
        let only = cache().join(format!("seed-{n}-loans"));
        std::fs::create_dir_all(&only).unwrap();
        for f in ["agents.jsonl", "loans.jsonl"] {
            if !only.join(f).exists() {
                std::fs::hard_link(dir.join(f), only.join(f))
                    .or_else(|_| std::fs::copy(dir.join(f), only.join(f)).map(|_| ()))
                    .unwrap();
            }
        }
        let started = Instant::now();
        loanhost::data::import::import_dir(&db, &only, |f, r| eprintln!("  {f}: {r}"))
            .await
            .unwrap();
        eprintln!(
            "imported into {} in {:.1} s",
            db.engine(),
            started.elapsed().as_secs_f64()
        );
    }
    db
}

fn cache() -> PathBuf {
    PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/loanhost/bench")
}

/// The officer with the median number of loans (a typical Agent).
async fn typical_agent(db: &Db) -> String {
    let sql = "SELECT loan_officer_id FROM loans GROUP BY loan_officer_id ORDER BY COUNT(*), loan_officer_id";
    let ids: Vec<String> = match db {
        Db::Sqlite(p) => sqlx::query_scalar(sql).fetch_all(p).await.unwrap(),
        Db::Postgres(p) => sqlx::query_scalar(sql).fetch_all(p).await.unwrap(),
    };
    ids[ids.len() / 2].clone()
}

fn by_status() -> Query {
    Query {
        dataset: Dataset::Loans,
        filter: None,
        predicates: vec![],
        group_by: vec![Key::Field("status".into())],
        distinct_on: None,
        aggregates: vec![Aggregate::Count, Aggregate::Sum("loanAmount".into())],
        order_by: vec![(0, true)],
        limit: Some(100),
    }
}

fn bench(c: &mut Criterion) {
    let rt = common::runtime();
    std::fs::create_dir_all(cache()).unwrap();
    let mut engines = vec![(
        "sqlite",
        format!(
            "sqlite://{}",
            cache().join(format!("loans-{}.db", loans())).display()
        ),
    )];
    if let Ok(url) = std::env::var("BENCH_POSTGRES_URL") {
        let (base, _) = url.rsplit_once('/').unwrap();
        rt.block_on(async {
            let admin = sqlx::PgPool::connect(&url).await.unwrap();
            let exists: Option<i32> =
                sqlx::query_scalar("SELECT 1 FROM pg_database WHERE datname = 'loanhost_bench'")
                    .fetch_optional(&admin)
                    .await
                    .unwrap();
            if exists.is_none() {
                sqlx::query("CREATE DATABASE loanhost_bench")
                    .execute(&admin)
                    .await
                    .unwrap();
            }
        });
        engines.push(("postgres", format!("{base}/loanhost_bench")));
    }
    let q = by_status();
    let mut group = c.benchmark_group(format!("grouped_aggregate_{}_loans", loans()));
    group.sample_size(10);
    for (engine, url) in engines {
        let db = rt.block_on(prepared(&url));
        let agent = rt.block_on(typical_agent(&db));
        let store = loanhost::data::ReportStore::of(&db);
        let admin = Scope {
            all: true,
            ..Default::default()
        };
        let mine = Scope {
            originated_by: Some(agent),
            ..Default::default()
        };
        let agent_rows = rt
            .block_on(query::run(
                &store,
                &q,
                Some(&mine),
                false,
                query::Allowance::standard(),
            ))
            .unwrap();
        eprintln!(
            "{engine}: the agent sees {} statuses",
            agent_rows.rows.len()
        );
        group.bench_function(format!("{engine}/admin"), |b| {
            b.to_async(&rt).iter(|| async {
                query::run(&store, &q, Some(&admin), true, query::Allowance::standard())
                    .await
                    .unwrap()
            })
        });
        group.bench_function(format!("{engine}/agent"), |b| {
            b.to_async(&rt).iter(|| async {
                query::run(&store, &q, Some(&mine), false, query::Allowance::standard())
                    .await
                    .unwrap()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
