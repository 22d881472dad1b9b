//! People: every scope's people are exactly those an oracle finds on the scope's loans (and the
//! caller), with the union of their parts, the directory's name before the loans', through an
//! import and a second import that moves a loan; names and tokens only for name readers.

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::data::import::import_dir;

/// Ids `p0`..: p0-p3 agents of company A (p0 officer, p1 assistant, p2 processor, p3 second
/// officer and an assistant: two parts), p4 a referrer in the directory with no company, p5 an officer of company B, p6 a
/// referrer known only by the loans' name, p7 a ConciergeKey of A managing p0.
/// The UUID a test id stands for (`p0` → `…0000000000a0`, `admin` → `…00000000adad`).
fn u(short: &str) -> String {
    let tail = match short {
        "admin" => "adad".to_string(),
        s => format!("00a{}", &s[1..]),
    };
    format!("aaaaaaaa-0000-0000-0000-{tail:0>12}")
}

fn agents() -> String {
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
fn company_id(c: &str) -> String {
    format!("cccccccc-0000-0000-0000-00000000000{}", c.to_lowercase())
}

/// A loan line: (id, company, officer, assistant, processor, referrer).
type LoanLine = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
);

const LOANS: [LoanLine; 5] = [
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

fn loan_json(l: &LoanLine) -> String {
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
async fn imported(loans: &[LoanLine], postgres: bool) -> (tempfile::TempDir, Db) {
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
async fn import(db: &Db, dir: &std::path::Path, loans: &[LoanLine], directory: bool) {
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
fn oracle(
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

fn everyone(limit: u32) -> PeopleQuery {
    PeopleQuery {
        limit,
        ..Default::default()
    }
}

async fn found(db: &Db, scope: &Scope, me: &str, q: &PeopleQuery, names: bool) -> Found {
    search(db, &uuids(scope), &u(me), q, names).await.unwrap()
}

/// `scope` with its test ids as UUIDs.
fn uuids(scope: &Scope) -> Scope {
    Scope {
        all: scope.all,
        company: scope.company.as_deref().map(company_id),
        managed_officers: scope.managed_officers.iter().map(|s| u(s)).collect(),
        originated_by: scope.originated_by.as_deref().map(u),
        referred_by: scope.referred_by.as_deref().map(u),
    }
}

fn as_map(f: &Found) -> BTreeMap<String, i64> {
    f.people.iter().map(|p| (p.id.clone(), p.parts)).collect()
}

/// A caller, their scope, and which loans the scope holds.
type Case = (&'static str, Scope, Box<dyn Fn(&LoanLine) -> bool>);

fn scopes() -> Vec<Case> {
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

#[tokio::test]
async fn every_scope_gives_the_people_on_its_loans_and_the_caller() {
    for postgres in [false, true] {
        scopes_on(postgres).await;
    }
}

async fn scopes_on(postgres: bool) {
    // Arrange
    let (dir, db) = imported(&LOANS, postgres).await;
    for round in 0..2 {
        let loans: Vec<LoanLine> = match round {
            0 => LOANS.to_vec(),
            // A second import (the loans alone) moves loan 1 to company B and drops its
            // assistant.
            _ => {
                let mut moved = LOANS.to_vec();
                moved[0] = (
                    "00000000-0000-0000-0000-000000000001",
                    "B",
                    "p0",
                    "",
                    "p2",
                    "p4",
                );
                import(&db, dir.path(), &moved[..1], false).await;
                moved
            }
        };
        for (me, scope, in_scope) in scopes() {
            // Act
            let got = found(&db, &scope, me, &everyone(MAX_PEOPLE), false).await;
            // Assert
            let want = oracle(&loans, in_scope, me);
            assert_eq!(
                as_map(&got),
                want,
                "{postgres} round {round}, {me}, {scope:?}"
            );
            assert_eq!(got.total, want.len() as u64);
            assert_eq!(got.people[0].id, u(me), "the caller comes first");
            assert!(got.people[0].is_caller);
            assert!(got.people[1..].iter().all(|p| !p.is_caller));
            assert!(
                got.people.iter().all(|p| p.name.is_none()),
                "no names asked"
            );
            let ids: Vec<&str> = got.people[1..].iter().map(|p| p.id.as_str()).collect();
            let mut sorted = ids.clone();
            sorted.sort();
            assert_eq!(ids, sorted, "then by id");
        }
    }
}

#[tokio::test]
async fn names_are_the_directorys_then_the_loans_and_tokens_all_match() {
    for postgres in [false, true] {
        names_on(postgres).await;
    }
}

async fn names_on(postgres: bool) {
    // Arrange
    let (dir, db) = imported(&LOANS, postgres).await;
    let admin = Scope {
        all: true,
        ..Default::default()
    };
    // Act
    let all = found(&db, &admin, "admin", &everyone(MAX_PEOPLE), true).await;
    let olive = found(
        &db,
        &admin,
        "admin",
        &PeopleQuery {
            tokens: vec!["OLIV".into()],
            ..everyone(10)
        },
        true,
    )
    .await;
    let stone = found(
        &db,
        &admin,
        "admin",
        &PeopleQuery {
            tokens: vec!["oliv".into(), "stone".into()],
            ..everyone(10)
        },
        true,
    )
    .await;
    // Assert
    let names: BTreeMap<&str, Option<&str>> = all
        .people
        .iter()
        .map(|p| (p.id.as_str(), p.name.as_deref()))
        .collect();
    assert_eq!(
        names[u("p0").as_str()],
        Some("Olivia Stone"),
        "the directory's name"
    );
    assert_eq!(
        names[u("p6").as_str()],
        Some("Loan Name p6"),
        "not in the directory: the loans'"
    );
    assert_eq!(names[u("admin").as_str()], Some("Ada Admin"));
    let by_name: Vec<&str> = all.people[1..]
        .iter()
        .map(|p| p.name.as_deref().unwrap())
        .collect();
    let mut sorted = by_name.clone();
    sorted.sort();
    assert_eq!(by_name, sorted, "after the caller, by name");
    let ids = |f: &Found| {
        f.people
            .iter()
            .map(|p| p.id.clone())
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(ids(&olive), BTreeSet::from([u("p0"), u("p3")]));
    assert_eq!(olive.total, 2);
    assert_eq!(ids(&stone), BTreeSet::from([u("p0")]));

    // A directory imported alone renames a person: the search reads the new name.
    let files = dir.path().join("directory-only");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::write(
        files.join("agents.jsonl"),
        agents().replace("\"Stone\"", "\"Rivers\""),
    )
    .unwrap();
    import_dir(&db, &files, |_, _| {}).await.unwrap();
    let renamed = |tokens: &[&str]| PeopleQuery {
        tokens: tokens.iter().map(|t| t.to_string()).collect(),
        ..everyone(10)
    };
    let rivers = found(&db, &admin, "admin", &renamed(&["rivers"]), true).await;
    let gone = found(&db, &admin, "admin", &renamed(&["stone"]), true).await;
    assert_eq!(ids(&rivers), BTreeSet::from([u("p0")]));
    assert_eq!(rivers.people[0].name.as_deref(), Some("Olivia Rivers"));
    assert_eq!(gone.total, 0, "the old name is no longer found");
}

#[tokio::test]
async fn parts_limit_and_refusals() {
    // Arrange
    let (_dir, db) = imported(&LOANS, false).await;
    let admin = Scope {
        all: true,
        ..Default::default()
    };
    let referrers = PeopleQuery {
        parts: vec![Part::ReferringAgent],
        ..everyone(1)
    };
    // Act
    let got = found(&db, &admin, "admin", &referrers, false).await;
    let by_name = search(
        &db,
        &Scope {
            originated_by: Some(u("p0")),
            ..Default::default()
        },
        &u("p0"),
        &PeopleQuery {
            tokens: vec!["olivia".into()],
            ..everyone(5)
        },
        false,
    )
    .await;
    // Assert
    assert_eq!(got.total, 2, "p4 and p6 refer; the caller plays no part");
    assert_eq!(got.people.len(), 1, "the limit");
    assert_eq!(got.people[0].id, u("p4"));
    assert!(
        matches!(by_name, Err(PeopleError::Denied(_))),
        "{by_name:?}"
    );
    for bad in [
        everyone(0),
        everyone(MAX_PEOPLE + 1),
        PeopleQuery {
            tokens: vec!["a b".into()],
            ..everyone(1)
        },
        PeopleQuery {
            tokens: vec!["x".into(); MAX_TOKENS + 1],
            ..everyone(1)
        },
    ] {
        assert!(
            matches!(bad.check(true), Err(PeopleError::Invalid(_))),
            "{bad:?}"
        );
    }
    // A token's `%` and `_` are text, not patterns.
    let pattern = PeopleQuery {
        tokens: vec!["%".into()],
        ..everyone(5)
    };
    assert_eq!(found(&db, &admin, "admin", &pattern, true).await.total, 0);
}
