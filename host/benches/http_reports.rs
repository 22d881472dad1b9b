//! End to end over HTTP: `tools/call report_loans` (groupBy Status) and
//! `report_loan_milestones` (defaults: four months) against a server on loopback with
//! `BENCH_LOANS` seeded loans (default 1,000,000, with their LOS history), as an Admin and as
//! an Agent, on SQLite and (when `BENCH_POSTGRES_URL` names a server) on PostgreSQL: token
//! validation, agent resolution, plugin instantiation, scope, SQL and JSON, all included.
//!
//! Beside each, in the same run and on the same database, the **raw-SQL reference**: the same
//! answer computed by the best hand-written SQL (sqlx, no host), so the host's overhead is
//! printed as a ratio. Each reference's totals are checked against the tool's answer first.
//!
//! `HTTP_REPORTS_ONLY=agent` (or `admin`) measures that caller's calls alone and skips the
//! contention test.
//!
//! The seeded databases are cached: `~/.cache/loanhost/bench/full-<N>.db` and the PostgreSQL
//! database `loanhost_bench_full_<N>`.

use std::time::{Duration, Instant};

mod common;

use criterion::{criterion_group, criterion_main, Criterion};
use loanhost::data::Db;
use serde_json::{json, Value};
use sqlx::Row;

use common::full::{bench_dir, engines, loans, Served};

/// The default milestone window for `common::full::TODAY`: the four months ending with
/// November 2026.
const WINDOW: (i64, i64) = (1_785_542_400_000, 1_796_083_200_000);

/// The Northstar stage of a raw LOS status, as SQL (docs/design.md §7.3).
const STAGE: &str =
    "CASE status WHEN 'Loan Open' THEN '1. Opened' WHEN 'Loan Preapproval' THEN '2. Pre-Approved' \
    WHEN 'Rate Locked' THEN '3. Rate Locked' WHEN 'Loan Approved' THEN '4. Approved' \
    WHEN 'Loan Clear To Close' THEN '4. Approved' WHEN 'Loan Closed' THEN '5. Closed & Funded' \
    WHEN 'Loan Funded' THEN '5. Closed & Funded' ELSE 'Other' END";

/// The hand-written SQL of a benchmarked call, with `?` placeholders and their values
/// (`me`: the agent's id). Each returns rows whose second-to-last column is a count.
fn reference(tool: &str, admin: bool, postgres: bool, me: &str) -> (String, Vec<Value>) {
    let mine = "(l.loan_officer_id = ? OR l.loan_assistant_id = ? OR l.referring_agent_id = ?)";
    let who = |v: &mut Vec<Value>| {
        if !admin {
            v.extend([json!(me), json!(me), json!(me)]);
        }
    };
    let mut params = Vec::new();
    let sql = match tool {
        "report_loans" => {
            who(&mut params);
            format!(
                "SELECT status, COUNT(*), COUNT(loan_amount), SUM(loan_amount), MIN(loan_amount), MAX(loan_amount) \
                 FROM loans l{} GROUP BY status ORDER BY status",
                if admin { String::new() } else { format!(" WHERE {mine}") }
            )
        }
        _ if admin => {
            // The best hand-written SQL on schema v4: the months' period sets hold one row per
            // (month, loan) with the union of its statuses' bits; count the loans per (month,
            // set), once, then give each stage the sets that hold one of its statuses.
            use loanhost::data::history_keys::{
                month_index, status_bit, STATUS_BITS, UNLISTED_BIT,
            };
            let label = if postgres {
                "(x.mi / 12)::text || '-' || lpad((x.mi % 12 + 1)::text, 2, '0')"
            } else {
                "(x.mi / 12) || '-' || printf('%02d', x.mi % 12 + 1)"
            };
            let funnel: [(&str, &[&str]); 5] = [
                ("1. Opened", &["Loan Open"]),
                ("2. Pre-Approved", &["Loan Preapproval"]),
                ("3. Rate Locked", &["Rate Locked"]),
                ("4. Approved", &["Loan Approved", "Loan Clear To Close"]),
                ("5. Closed & Funded", &["Loan Closed", "Loan Funded"]),
            ];
            let mut stages = Vec::new();
            let mut mapped = 0;
            for (stage, statuses) in funnel {
                let mask = statuses.iter().map(|s| status_bit(s)).fold(0, |a, b| a | b);
                mapped |= mask;
                stages.push(format!(
                    "SELECT '{stage}' AS stage, CAST({mask} AS BIGINT) AS mask"
                ));
            }
            let every = ((1_i64 << STATUS_BITS.len()) - 1) | UNLISTED_BIT;
            stages.push(format!(
                "SELECT 'Other', CAST({} AS BIGINT)",
                every & !mapped
            ));
            params.extend([
                json!(month_index(WINDOW.0)),
                json!(month_index(WINDOW.1 - 1)),
            ]);
            format!(
                "WITH x AS MATERIALIZED (\
                   SELECT period_index AS mi, status_bits AS bits, COUNT(*) AS c, SUM(loan_amount) AS amount \
                   FROM los_history_months WHERE in_snapshot = 1 AND period_index >= ? AND period_index <= ? \
                   GROUP BY period_index, status_bits) \
                 SELECT {label} AS period, s.stage, CAST(SUM(x.c) AS BIGINT), SUM(x.amount) \
                 FROM x CROSS JOIN ({}) s WHERE (x.bits & s.mask) <> 0 GROUP BY 1, 2 ORDER BY 1, 2",
                stages.join(" UNION ALL ")
            )
        }
        _ => {
            let month = if postgres {
                "to_char(to_timestamp(h.occurred_at / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM')"
            } else {
                "strftime('%Y-%m', h.occurred_at / 1000, 'unixepoch')"
            };
            let stage = STAGE.replace("CASE status", "CASE h.status");
            let (from, amount) = if admin {
                (
                    "los_status_history h WHERE h.in_snapshot = 1".to_string(),
                    "h.loan_amount",
                )
            } else {
                (
                    format!("los_status_history h JOIN loans l ON l.key = h.loan_key WHERE {mine}"),
                    "l.loan_amount",
                )
            };
            who(&mut params);
            params.extend([json!(WINDOW.0), json!(WINDOW.1)]);
            format!(
                "SELECT period, stage, COUNT(*), SUM(amount) FROM (SELECT DISTINCT {month} AS period, {stage} AS stage, \
                 h.loan_key, {amount} AS amount FROM {from} AND h.occurred_at >= ? AND h.occurred_at < ?) d \
                 GROUP BY period, stage ORDER BY period, stage"
            )
        }
    };
    (sql, params)
}

/// Runs a reference statement; returns the total of its count column.
async fn run_reference(db: &Db, sql: &str, params: &[Value], count_col: usize) -> i64 {
    macro_rules! go {
        ($pool:expr, $sql:expr) => {{
            let mut q = sqlx::query($sql);
            for p in params {
                q = match p {
                    Value::String(s) => q.bind(s.clone()),
                    v => q.bind(v.as_i64().unwrap()),
                };
            }
            q.fetch_all($pool)
                .await
                .unwrap()
                .iter()
                .map(|r| r.get::<i64, _>(count_col))
                .sum()
        }};
    }
    match db {
        Db::Sqlite(p) => go!(p, sql),
        Db::Postgres(p) => {
            let numbered = loanhost::data::store::number_placeholders(sql);
            go!(p, numbered.as_str())
        }
    }
}

/// The total count of a tool's answer (`totalCount`, or the sum of the buckets' loan counts).
fn answer_total(tool: &str, reply: &Value) -> i64 {
    let s = &reply["result"]["structuredContent"];
    match tool {
        "report_loans" => s["totalCount"].as_i64().unwrap(),
        _ => s["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["loanCount"].as_i64().unwrap())
            .sum(),
    }
}

/// p50 and p99 (ms) of `calls` sequential Agent `report_loans` calls.
async fn agent_latencies(
    client: &reqwest::Client,
    url: &str,
    agent: &str,
    calls: usize,
) -> (f64, f64) {
    let mut ms = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        let r = common::tools_call(client, url, agent, "report_loans", json!({})).await;
        assert_eq!(r["result"]["isError"], false, "{r}");
        ms.push(started.elapsed().as_secs_f64() * 1e3);
    }
    ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (ms[ms.len() / 2], ms[(ms.len() * 99).div_ceil(100) - 1])
}

/// The Agent's latencies alone, then with 8 Admin report loops running (bounded: they stop
/// when the Agent's 200 calls are done).
async fn contention(
    client: &reqwest::Client,
    url: &str,
    agent: &str,
    admin: &str,
) -> ((f64, f64), (f64, f64), u64) {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    let alone = agent_latencies(client, url, agent, 200).await;
    let stop = Arc::new(AtomicBool::new(false));
    let finished = Arc::new(AtomicU64::new(0));
    let mut loops = Vec::new();
    for i in 0..8 {
        let (client, url, admin) = (client.clone(), url.to_string(), admin.to_string());
        let (stop, finished) = (stop.clone(), finished.clone());
        loops.push(tokio::spawn(async move {
            let (tool, args) = if i % 2 == 0 {
                ("report_loans", json!({"groupBy": "Status"}))
            } else {
                ("report_loan_milestones", json!({}))
            };
            while !stop.load(Ordering::Relaxed) {
                common::tools_call(&client, &url, &admin, tool, args.clone()).await;
                finished.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    // Let the Admin calls fill the heavy slots and their queue.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let loaded = agent_latencies(client, url, agent, 200).await;
    stop.store(true, Ordering::Relaxed);
    for l in loops {
        let _ = l.await;
    }
    (alone, loaded, finished.load(Ordering::Relaxed))
}

fn bench(c: &mut Criterion) {
    let rt = common::runtime();
    let n = loans();
    let dir = bench_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap();
    let mut summary = Vec::new();
    for (engine, db_url) in rt.block_on(engines(n)) {
        let served = Served::start(&rt, db_url, n);
        let (raw_pool, db, url) = (&served.raw, &served.db, &served.url);
        let token = |email: &str| served.token(email, Duration::from_secs(3600));
        let agent_id = rt
            .block_on(db.agent_by_email("agent@demo.loanhost.local"))
            .unwrap()
            .expect("the seed's demo agent")
            .id;
        let mut group = c.benchmark_group(format!("http_tools_call_{n}_loans_{engine}"));
        group
            .sample_size(10)
            .measurement_time(Duration::from_secs(10));
        let only = std::env::var("HTTP_REPORTS_ONLY").ok();
        for (who, email) in [
            ("admin", "admin@demo.loanhost.local"),
            ("agent", "agent@demo.loanhost.local"),
        ] {
            if only.as_deref().is_some_and(|o| o != who) {
                continue;
            }
            let t = token(email);
            for (tool, args) in [
                ("report_loans", json!({"groupBy": "Status"})),
                ("report_loan_milestones", json!({})),
            ] {
                let call = || common::tools_call(&client, url, &t, tool, args.clone());
                // One timed call first: a call that fails (e.g. the statement timeout) is
                // reported and not measured.
                let started = Instant::now();
                let once = rt.block_on(call());
                let first = started.elapsed();
                if once["result"]["isError"] != false {
                    eprintln!(
                        "{engine} {tool}/{who}: {}",
                        once["result"]["content"][0]["text"]
                    );
                    continue;
                }
                let (sql, params) =
                    reference(tool, who == "admin", engine == "postgres", &agent_id);
                let count_col = if tool == "report_loans" { 1 } else { 2 };
                let raw_total = rt.block_on(run_reference(raw_pool, &sql, &params, count_col));
                assert_eq!(
                    raw_total,
                    answer_total(tool, &once),
                    "{engine} {tool}/{who}: the reference must give the tool's answer"
                );
                let timed = |f: &mut dyn FnMut()| {
                    let started = Instant::now();
                    let mut runs = 0u32;
                    while runs < 3 || (started.elapsed() < Duration::from_secs(5) && runs < 200) {
                        f();
                        runs += 1;
                    }
                    started.elapsed() / runs
                };
                group.bench_function(format!("{tool}/{who}"), |b| b.to_async(&rt).iter(call));
                group.bench_function(format!("{tool}/{who}/raw_sql"), |b| {
                    b.to_async(&rt)
                        .iter(|| run_reference(raw_pool, &sql, &params, count_col))
                });
                // The ratio from a plain mean over the same few seconds (criterion's own
                // estimates are in its report).
                let e2e = timed(&mut || {
                    rt.block_on(call());
                });
                let raw = timed(&mut || {
                    rt.block_on(run_reference(raw_pool, &sql, &params, count_col));
                });
                let budget = raw.mul_f64(1.1) + Duration::from_millis(1);
                summary.push(format!(
                    "{engine:8} {tool:24} {who:5}: end to end {:>9.3} ms (first {:>8.1} ms), raw SQL {:>9.3} ms, ratio {:>5.2}, within 1.1x + 1 ms: {}",
                    e2e.as_secs_f64() * 1e3,
                    first.as_secs_f64() * 1e3,
                    raw.as_secs_f64() * 1e3,
                    e2e.as_secs_f64() / raw.as_secs_f64(),
                    if e2e <= budget { "yes" } else { "NO" }
                ));
            }
        }
        group.finish();
        if only.is_some() {
            served.server.abort();
            continue;
        }
        // Contention: an Agent's report_loans while 8 Admin reports run side by side.
        let agent = token("agent@demo.loanhost.local");
        let admin = token("admin@demo.loanhost.local");
        let (alone, loaded, admin_calls) = rt.block_on(contention(&client, url, &agent, &admin));
        summary.push(format!(
            "{engine:8} contention: Agent report_loans p50/p99 alone {:.1}/{:.1} ms; beside 8 Admin reports {:.1}/{:.1} ms ({} Admin calls finished meanwhile)",
            alone.0, alone.1, loaded.0, loaded.1, admin_calls
        ));
        served.server.abort();
    }
    println!("\nhttp_reports summary ({n} loans, means over up to 5 s each):");
    for line in summary {
        println!("  {line}");
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
