//! One loan application read as a user measures it: `tools/call get_loan_application` over
//! HTTP against a server on loopback with `BENCH_LOANS` seeded loans (default 1,000,000, one
//! in ten with an application; `common::full`), on SQLite and, when `BENCH_POSTGRES_URL` names
//! a server, on PostgreSQL: token validation, the caller's per-loan scope, the plugin, the
//! listing capability's read of every part, the section-completion report and the JSON, all
//! included. As an Admin and a Processor (every application) and the demo Agent (those of its
//! loans), for `BENCH_APPLICATIONS` applications each (default 20) spread over the table.
//!
//! Beside each, in the same run and on the same database, the raw SQL of the same read (the
//! parts and the loan's columns by the application's id, within the caller's scope) on a pool
//! of its own that hands connections out without a ping. Bound (issue #73): the median call
//! within 5 ms. Prints one line per caller and the cases over their bound; exits non-zero when
//! one is.

mod common;

use std::time::{Duration, Instant};

use loanhost::data::Db;
use serde_json::json;

use common::full::{bench_dir, engines, loans, Served};

/// The bound of a read, end to end.
const BOUND: Duration = Duration::from_millis(5);

/// Every column `get_loan_application` reads (its manifest's fields), by the application's id.
const READ: &str = "SELECT a.id, l.id, l.loan_number, a.status, a.updated, a.application, \
    a.sections, a.tasks, a.documents, a.timeline, a.contact_roles, l.status, l.purpose, \
    a.updated_by_name, a.contacts, a.referred_by, l.loan_officer_name, a.borrower \
    FROM loan_applications a JOIN loans l ON l.key = a.loan_key WHERE a.id = ?";

/// The Agent's reporting scope, as the host writes it for a plain Agent.
const MINE: &str = "(l.loan_officer_id = ? OR l.loan_assistant_id = ? OR l.referring_agent_id = ?)";

fn rounds() -> usize {
    std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30)
}

fn applications() -> usize {
    std::env::var("BENCH_APPLICATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `count` application ids spread evenly over those the caller may read (`me`: an Agent's
/// id; none: every application).
async fn ids(db: &Db, me: Option<&str>, count: usize) -> Vec<String> {
    let sql = match me {
        None => "SELECT a.id FROM loan_applications a ORDER BY a.loan_key".to_string(),
        Some(_) => format!(
            "SELECT a.id FROM loan_applications a JOIN loans l ON l.key = a.loan_key \
             WHERE {MINE} ORDER BY a.loan_key"
        ),
    };
    macro_rules! run {
        ($pool:expr, $sql:expr) => {{
            let mut q = sqlx::query_scalar::<_, String>($sql);
            if let Some(me) = me {
                q = q.bind(me).bind(me).bind(me);
            }
            q.fetch_all($pool).await.unwrap()
        }};
    }
    let all = match db {
        Db::Sqlite(p) => run!(p, &sql),
        Db::Postgres(p) => {
            let numbered = loanhost::data::store::number_placeholders(&sql);
            run!(p, &numbered)
        }
    };
    assert!(!all.is_empty(), "the caller may read no application");
    let step = (all.len() / count.max(1)).max(1);
    all.into_iter().step_by(step).take(count).collect()
}

/// The raw SQL of one read: the row's id (checked against the tool's answer).
async fn reference(db: &Db, id: &str, me: Option<&str>) -> String {
    let sql = match me {
        None => READ.to_string(),
        Some(_) => format!("{READ} AND {MINE}"),
    };
    macro_rules! run {
        ($pool:expr, $sql:expr) => {{
            let mut q = sqlx::query($sql).bind(id);
            if let Some(me) = me {
                q = q.bind(me).bind(me).bind(me);
            }
            let row = q.fetch_one($pool).await.unwrap();
            sqlx::Row::get::<String, _>(&row, 0)
        }};
    }
    match db {
        Db::Sqlite(p) => run!(p, &sql),
        Db::Postgres(p) => {
            let numbered = loanhost::data::store::number_placeholders(&sql);
            run!(p, &numbered)
        }
    }
}

fn main() {
    let rt = common::runtime();
    let n = loans();
    std::fs::create_dir_all(bench_dir()).unwrap();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let mut over = Vec::new();
    for (engine, db_url) in rt.block_on(engines(n)) {
        let served = Served::start(&rt, db_url, n);
        let agent_id = rt
            .block_on(served.db.agent_by_email("agent@demo.loanhost.local"))
            .unwrap()
            .expect("the seed's demo agent")
            .id;
        for (who, email, me) in [
            ("admin", "admin@demo.loanhost.local", None),
            ("processor", "processor@demo.loanhost.local", None),
            (
                "agent",
                "agent@demo.loanhost.local",
                Some(agent_id.as_str()),
            ),
        ] {
            let token = served.token(email, Duration::from_secs(3600));
            let picked = rt.block_on(ids(&served.raw, me, applications()));
            let (mut host, mut raw) = (Vec::new(), Vec::new());
            rt.block_on(async {
                for id in &picked {
                    let args = json!({"loanApplicationId": id});
                    let call = || {
                        common::tools_call(
                            &client,
                            &served.url,
                            &token,
                            "get_loan_application",
                            args.clone(),
                        )
                    };
                    // The answer first: the application itself, and the reference finds it.
                    let once = call().await;
                    assert_eq!(
                        once["result"]["structuredContent"]["id"], *id,
                        "{engine} {who}: {once}"
                    );
                    assert_eq!(reference(&served.raw, id, me).await, *id);
                    for _ in 0..rounds() {
                        let t = Instant::now();
                        call().await;
                        host.push(t.elapsed());
                        let t = Instant::now();
                        reference(&served.raw, id, me).await;
                        raw.push(t.elapsed());
                    }
                }
            });
            let worst = {
                let mut v = host.clone();
                v.sort();
                v[v.len() * 9 / 10]
            };
            let (h, r) = (median(host), median(raw));
            let line = format!(
                "{engine} {who} get_loan_application ({} applications x {} calls): median {:.3} ms, \
                 p90 {:.3} ms, SQL {:.3} ms, {:.1}x (bound {:.0} ms)",
                picked.len(),
                rounds(),
                ms(h),
                ms(worst),
                ms(r),
                h.as_secs_f64() / r.as_secs_f64(),
                ms(BOUND)
            );
            println!("{line}");
            if h > BOUND {
                over.push(line);
            }
        }
        served.server.abort();
    }
    if !over.is_empty() {
        println!("\nover their bound ({}):", over.len());
        for l in &over {
            println!("  {l}");
        }
        std::process::exit(1);
    }
}
