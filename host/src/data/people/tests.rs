//! People: every scope's people are exactly those an oracle finds on the scope's loans (and the
//! caller), with the union of their parts, the directory's name before the loans', through an
//! import and a second import that moves a loan; names and tokens only for name readers.

use std::collections::{BTreeMap, BTreeSet};

use super::{search, Found, Part, PeopleError, PeopleQuery, MAX_PEOPLE, MAX_TOKENS};
use crate::data::import::import_dir;
use crate::data::scope::Scope;

mod fixture;

use fixture::{
    agents, as_map, everyone, found, import, imported, oracle, scopes, u, LoanLine, LOANS,
};

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
