//! A page of 50 loans (the listing capability, `query::list`) against the raw SQL of the same
//! page, and `search_users`' search (`data::people::search`), over the full data set of
//! `BENCH_LOANS` loans (default 1,000,000; `common::full`), on SQLite and, when
//! `BENCH_POSTGRES_URL` names a server, on PostgreSQL. For an Admin, a Processor and a typical
//! Agent, every `orderByOptions` order, descending, the first page and the page after 20 pages:
//! the median of `BENCH_ROUNDS` runs (default 30) of each, host and reference alternating in
//! one run; the reference on a pool of its own that, like the host's report connections, hands
//! connections out without a ping. Bounds (issue #72): a page within 1.1 x its SQL + 1 ms; a search within 5 ms.
//! Prints one line per case and the cases over their bound; exits non-zero when one is.

mod common;

use std::time::{Duration, Instant};

use loanhost::data::catalog::Dataset;
use loanhost::data::people::{self, PeopleQuery};
use loanhost::data::query::{self, Allowance, ListOrder, ListQuery, Readers};
use loanhost::data::scope::Scope;
use loanhost::data::{Db, ReportStore};

use common::full::{engines, loans, prepare};

/// The fields of each listed loan.
const FIELDS: [&str; 6] = [
    "id",
    "loanNumber",
    "status",
    "loanAmount",
    "updated",
    "loanOfficerId",
];
/// The reference's columns for [`FIELDS`].
const COLUMNS: &str = "l.id, l.loan_number, l.status, l.loan_amount, l.updated, l.loan_officer_id";
/// Rows a page.
const PAGE: u32 = 50;

fn rounds() -> usize {
    std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn list_of(order: ListOrder) -> ListQuery {
    ListQuery {
        dataset: Dataset::Loans,
        filter: None,
        predicates: vec![],
        fields: FIELDS.map(String::from).to_vec(),
        order,
        descending: true,
        page_size: PAGE,
    }
}

/// The column `order` sorts by.
fn column(order: ListOrder) -> &'static str {
    match order {
        ListOrder::Updated => "l.updated",
        ListOrder::StatusDate => "l.status_date",
        ListOrder::Amount => "l.loan_amount",
        ListOrder::ClosingDate => "l.estimated_closing_date",
        ListOrder::Commission => "l.locked_compensation",
    }
}

/// The raw SQL of the page after `(value, key)` (none: the first page), rows with a value.
async fn reference(db: &Db, scope: &Scope, order: ListOrder, after: Option<(i64, i64)>) -> usize {
    let (predicate, params) = scope.predicate();
    let col = column(order);
    let after_sql = match after {
        Some(_) => format!(" AND ({col}, l.key) < (?, ?)"),
        None => String::new(),
    };
    let sql = format!(
        "SELECT {COLUMNS}, {col}, l.key FROM loans l WHERE {predicate} AND {col} IS NOT NULL{after_sql} \
         ORDER BY {col} DESC, l.key DESC LIMIT {PAGE}"
    );
    macro_rules! run {
        ($pool:expr, $sql:expr) => {{
            let mut q = sqlx::query($sql);
            for p in &params {
                q = q.bind(p.clone());
            }
            if let Some((v, k)) = after {
                q = q.bind(v).bind(k);
            }
            q.fetch_all($pool).await.unwrap().len()
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

/// The (value, key) where the 20th page of `order` for `scope` ends, by the reference.
async fn twentieth(db: &Db, scope: &Scope, order: ListOrder) -> Option<(i64, i64)> {
    let (predicate, params) = scope.predicate();
    let col = column(order);
    let sql = format!(
        "SELECT {col}, l.key FROM loans l WHERE {predicate} AND {col} IS NOT NULL \
         ORDER BY {col} DESC, l.key DESC LIMIT 1 OFFSET {}",
        20 * PAGE - 1
    );
    macro_rules! run {
        ($pool:expr, $sql:expr) => {{
            let mut q = sqlx::query_as::<_, (i64, i64)>($sql);
            for p in &params {
                q = q.bind(p.clone());
            }
            q.fetch_optional($pool).await.unwrap()
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

/// A typical Agent (the officer with the median number of loans) and the company with the most.
async fn callers(db: &Db) -> (String, String) {
    let officers = "SELECT loan_officer_id FROM loans GROUP BY loan_officer_id ORDER BY COUNT(*), loan_officer_id";
    let companies = "SELECT company_id FROM loans WHERE company_id IS NOT NULL GROUP BY company_id ORDER BY COUNT(*) DESC, company_id";
    let (o, c): (Vec<String>, Vec<String>) = match db {
        Db::Sqlite(p) => (
            sqlx::query_scalar(officers).fetch_all(p).await.unwrap(),
            sqlx::query_scalar(companies).fetch_all(p).await.unwrap(),
        ),
        Db::Postgres(p) => (
            sqlx::query_scalar(officers).fetch_all(p).await.unwrap(),
            sqlx::query_scalar(companies).fetch_all(p).await.unwrap(),
        ),
    };
    (o[o.len() / 2].clone(), c[0].clone())
}

fn main() {
    let rt = common::runtime();
    let n = loans();
    let mut over = Vec::new();
    for (engine, url) in rt.block_on(engines(n)) {
        let db = rt.block_on(async {
            let db = Db::open(&url)
                .await
                .expect("opening the benchmark database");
            prepare(&db, n).await;
            db
        });
        let store = ReportStore::of(&db);
        // The reference's own pool, as the other benchmarks' (no ping per statement).
        let reference_db = rt
            .block_on(Db::open_reference(&url))
            .expect("the reference pool");
        let (agent, company) = rt.block_on(callers(&db));
        let scopes = [
            (
                "admin",
                Scope {
                    all: true,
                    ..Default::default()
                },
                agent.clone(),
            ),
            (
                "processor",
                Scope {
                    company: Some(company),
                    ..Default::default()
                },
                agent.clone(),
            ),
            (
                "agent",
                Scope {
                    originated_by: Some(agent.clone()),
                    ..Default::default()
                },
                agent.clone(),
            ),
        ];
        for (who, scope, me) in &scopes {
            for order in ListOrder::ALL {
                let q = list_of(order);
                let later = rt.block_on(twentieth(&db, scope, order));
                for (page, after) in [("first", None), ("21st", later)] {
                    if page == "21st" && after.is_none() {
                        continue;
                    }
                    let position = after.map(|(value, key)| loanhost::data::cursor::Position {
                        value: Some(value),
                        key,
                        generation: 0,
                        nulls: false,
                    });
                    let (mut host, mut raw) = (Vec::new(), Vec::new());
                    rt.block_on(async {
                        // The snapshot's generation, as a cursor the host issued would carry it.
                        let generation = generation(&db).await;
                        let position = position.map(|mut p| {
                            p.generation = generation;
                            p
                        });
                        for _ in 0..rounds() {
                            let t = Instant::now();
                            let listed = query::list(
                                &store,
                                &q,
                                position,
                                Some(scope),
                                Readers::default(),
                                Allowance::standard(),
                            )
                            .await
                            .unwrap();
                            host.push(t.elapsed());
                            assert!(listed.rows.len() <= PAGE as usize);
                            let t = Instant::now();
                            reference(&reference_db, scope, order, after).await;
                            raw.push(t.elapsed());
                        }
                    });
                    let (h, r) = (median(host), median(raw));
                    let bound = r.mul_f64(1.1) + Duration::from_millis(1);
                    let line = format!(
                        "{engine} {who} {} {page} page: host {:.3} ms, SQL {:.3} ms, {:.2}x (bound {:.3} ms)",
                        order.as_str(),
                        h.as_secs_f64() * 1e3,
                        r.as_secs_f64() * 1e3,
                        h.as_secs_f64() / r.as_secs_f64(),
                        bound.as_secs_f64() * 1e3
                    );
                    println!("{line}");
                    if h > bound {
                        over.push(line);
                    }
                }
            }
            let search = PeopleQuery {
                limit: 25,
                ..Default::default()
            };
            let by_name = PeopleQuery {
                tokens: vec!["an".into()],
                limit: 25,
                ..Default::default()
            };
            for (what, q) in [("everyone", &search), ("by name", &by_name)] {
                let times: Vec<Duration> = rt.block_on(async {
                    let mut times = Vec::new();
                    for _ in 0..rounds() {
                        let t = Instant::now();
                        people::search(&db, scope, me, q, true).await.unwrap();
                        times.push(t.elapsed());
                    }
                    times
                });
                let m = median(times);
                let line = format!(
                    "{engine} {who} search_users {what}: {:.3} ms (bound 5 ms)",
                    m.as_secs_f64() * 1e3
                );
                println!("{line}");
                if m > Duration::from_millis(5) {
                    over.push(line);
                }
            }
        }
    }
    if !over.is_empty() {
        println!("\nover their bound ({}):", over.len());
        for l in &over {
            println!("  {l}");
        }
        std::process::exit(1);
    }
}

/// The snapshot's generation.
async fn generation(db: &Db) -> i64 {
    let sql = "SELECT generation FROM listing_state WHERE id = 1";
    match db {
        Db::Sqlite(p) => sqlx::query_scalar(sql).fetch_one(p).await.unwrap(),
        Db::Postgres(p) => sqlx::query_scalar(sql).fetch_one(p).await.unwrap(),
    }
}
