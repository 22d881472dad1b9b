//! The people tests' world: agents in the directory, five loans with their officers,
//! assistants, processors and referrers, imported on either engine; an oracle of who is on
//! which loans, and the callers' scopes.

use std::collections::BTreeMap;

use super::super::{search, Found, Part, PeopleQuery};
use crate::data::import::import_dir;
use crate::data::scope::Scope;
use crate::data::store::Db;
/// Ids `p0`..: p0-p3 agents of company A (p0 officer, p1 assistant, p2 processor, p3 second
/// officer and an assistant: two parts), p4 a referrer in the directory with no company, p5 an officer of company B, p6 a
/// referrer known only by the loans' name, p7 a ConciergeKey of A managing p0.
/// The UUID a test id stands for (`p0` → `…0000000000a0`, `admin` → `…00000000adad`).
pub(super) fn u(short: &str) -> String {
    let tail = match short {
        "admin" => "adad".to_string(),
        s => format!("00a{}", &s[1..]),
    };
    format!("aaaaaaaa-0000-0000-0000-{tail:0>12}")
}

pub(super) fn agents() -> String {
    let agent = |short: &str, first: &str, last: &str, company: Option<&str>, roles: &str| {
        format!(
            r#"{{"id":"{}","email":"{short}@x.test","firstName":"{first}","lastName":"{last}","companyId":{},"roles":[{roles}],"managedAgentIds":{}}}"#,
            u(short),
            company.map_or("null".into(), |c| format!("\"{}\"", company_id(c))),
            if short == "p7" {
                format!("[\"{}\"]", u("p0"))
            } else {
                "[]".into()
            }
        )
    };
    [
        agent("p0", "Olivia", "Stone", Some("A"), r#""Agent""#),
        agent("p1", "Ann", "Assist", Some("A"), r#""Agent""#),
        agent("p2", "Paul", "Proc", Some("A"), r#""Processor""#),
        agent("p3", "Olive", "Berry", Some("A"), r#""Agent""#),
        agent("p4", "Rita", "Referrer", None, r#""Agent","PreLicensed""#),
        agent("p5", "Bob", "Other", Some("B"), r#""Agent""#),
        agent("p7", "Cora", "Key", Some("A"), r#""ConciergeKey""#),
        agent("admin", "Ada", "Admin", None, r#""Admin""#),
    ]
    .join("\n")
}

/// The UUID of company `A` or `B`.
pub(super) fn company_id(c: &str) -> String {
    format!("cccccccc-0000-0000-0000-00000000000{}", c.to_lowercase())
}

/// A loan line: (id, company, officer, assistant, processor, referrer).
pub(super) type LoanLine = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
);

pub(super) const LOANS: [LoanLine; 5] = [
    (
        "00000000-0000-0000-0000-000000000001",
        "A",
        "p0",
        "p1",
        "p2",
        "p4",
    ),
    (
        "00000000-0000-0000-0000-000000000002",
        "A",
        "p3",
        "",
        "p2",
        "",
    ),
    (
        "00000000-0000-0000-0000-000000000003",
        "B",
        "p5",
        "",
        "",
        "p6",
    ),
    (
        "00000000-0000-0000-0000-000000000004",
        "A",
        "p0",
        "p3",
        "",
        "p6",
    ),
    (
        "00000000-0000-0000-0000-000000000005",
        "B",
        "p5",
        "",
        "",
        "p4",
    ),
];

pub(super) fn loan_json(l: &LoanLine) -> String {
    let opt = |v: &str| match v {
        "" => "null".to_string(),
        v => format!("\"{}\"", u(v)),
    };
    let name = |v: &str| match v {
        "" => "null".to_string(),
        v => format!("\"Loan Name {v}\""),
    };
    format!(
        r#"{{"id":"{}","loanNumber":"N{}","borrowerFirstName":"B","borrowerLastName":"C","borrowerEmail":"b@x.test","status":"Loan Open","companyId":"{}","loanOfficerId":{},"loanOfficerName":{},"loanAssistantId":{},"processorId":{},"processorName":{},"referringAgentId":{},"referringAgentName":{}}}"#,
        l.0,
        &l.0[35..],
        company_id(l.1),
        opt(l.2),
        name(l.2),
        opt(l.3),
        opt(l.4),
        name(l.4),
        opt(l.5),
        name(l.5),
    )
}

/// A database of the current schema on `postgres` or SQLite, `loans` imported.
pub(super) async fn imported(loans: &[LoanLine], postgres: bool) -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().unwrap();
    let url = match postgres {
        false => format!("sqlite://{}", dir.path().join("t.db").display()),
        true => {
            let admin_url = crate::data::test_postgres_url();
            let server = sqlx::PgPool::connect(&admin_url).await.unwrap();
            let name = format!(
                "loanhost_people_{}_{}",
                std::process::id(),
                NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            );
            // Dropped by the next run of the tests (a test's own end may not run).
            let stale = format!("loanhost_people_{}_%", std::process::id());
            for (old,) in sqlx::query_as::<_, (String,)>(
                "SELECT datname FROM pg_database WHERE datname LIKE 'loanhost_people_%' \
                 AND datname NOT LIKE $1",
            )
            .bind(&stale)
            .fetch_all(&server)
            .await
            .unwrap()
            {
                let drop = format!("DROP DATABASE IF EXISTS {old} WITH (FORCE)");
                sqlx::query(&drop).execute(&server).await.unwrap();
            }
            for sql in [
                format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
                format!("CREATE DATABASE {name}"),
            ] {
                sqlx::query(&sql).execute(&server).await.unwrap();
            }
            format!("{}/{name}", admin_url.rsplit_once('/').unwrap().0)
        }
    };
    let db = Db::open(&url).await.unwrap();
    import(&db, dir.path(), loans, true).await;
    (dir, db)
}

/// Numbers the PostgreSQL databases of one test process.
static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Imports `loans`, with the directory when `directory` (without it, only the people the loans
/// left or took are written again).
pub(super) async fn import(db: &Db, dir: &std::path::Path, loans: &[LoanLine], directory: bool) {
    let files = dir.join("in");
    std::fs::create_dir_all(&files).unwrap();
    let directory_file = files.join("agents.jsonl");
    match directory {
        true => std::fs::write(&directory_file, agents()).unwrap(),
        false => {
            let _ = std::fs::remove_file(&directory_file);
        }
    }
    let lines: Vec<String> = loans.iter().map(loan_json).collect();
    std::fs::write(files.join("loans.jsonl"), lines.join("\n")).unwrap();
    import_dir(db, &files, |_, _| {}).await.unwrap();
}

/// The oracle: per person on the loans `in_scope` keeps, the union of their parts; the caller
/// with no part when on none.
pub(super) fn oracle(
    loans: &[LoanLine],
    in_scope: impl Fn(&LoanLine) -> bool,
    me: &str,
) -> BTreeMap<String, i64> {
    let mut people = BTreeMap::new();
    for l in loans.iter().filter(|l| in_scope(l)) {
        for (id, part) in [
            (l.2, Part::LoanOfficer),
            (l.3, Part::LoanAssistant),
            (l.4, Part::Processor),
            (l.5, Part::ReferringAgent),
        ] {
            if !id.is_empty() {
                *people.entry(u(id)).or_insert(0) |= part.bit();
            }
        }
    }
    people.entry(u(me)).or_insert(0);
    people
}

pub(super) fn everyone(limit: u32) -> PeopleQuery {
    PeopleQuery {
        limit,
        ..Default::default()
    }
}

pub(super) async fn found(db: &Db, scope: &Scope, me: &str, q: &PeopleQuery, names: bool) -> Found {
    search(db, &uuids(scope), &u(me), q, names).await.unwrap()
}

/// `scope` with its test ids as UUIDs.
pub(super) fn uuids(scope: &Scope) -> Scope {
    Scope {
        all: scope.all,
        company: scope.company.as_deref().map(company_id),
        managed_officers: scope.managed_officers.iter().map(|s| u(s)).collect(),
        originated_by: scope.originated_by.as_deref().map(u),
        referred_by: scope.referred_by.as_deref().map(u),
    }
}

pub(super) fn as_map(f: &Found) -> BTreeMap<String, i64> {
    f.people.iter().map(|p| (p.id.clone(), p.parts)).collect()
}

/// A caller, their scope, and which loans the scope holds.
pub(super) type Case = (&'static str, Scope, Box<dyn Fn(&LoanLine) -> bool>);

pub(super) fn scopes() -> Vec<Case> {
    vec![
        (
            "admin",
            Scope {
                all: true,
                ..Default::default()
            },
            Box::new(|_| true),
        ),
        (
            "p2",
            Scope {
                company: Some("A".into()),
                ..Default::default()
            },
            Box::new(|l: &LoanLine| l.1 == "A"),
        ),
        (
            "p0",
            Scope {
                originated_by: Some("p0".into()),
                ..Default::default()
            },
            Box::new(|l: &LoanLine| l.2 == "p0" || l.3 == "p0" || l.5 == "p0"),
        ),
        (
            "p4",
            Scope {
                referred_by: Some("p4".into()),
                ..Default::default()
            },
            Box::new(|l: &LoanLine| l.5 == "p4"),
        ),
        (
            "p7",
            Scope {
                managed_officers: vec!["p0".into()],
                ..Default::default()
            },
            Box::new(|l: &LoanLine| l.2 == "p0"),
        ),
        (
            "p2",
            Scope {
                company: Some("B".into()),
                originated_by: Some("p2".into()),
                ..Default::default()
            },
            Box::new(|l: &LoanLine| l.1 == "B" || l.2 == "p2" || l.3 == "p2" || l.5 == "p2"),
        ),
        ("nobody", Scope::default(), Box::new(|_| false)),
    ]
}
