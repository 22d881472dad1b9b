//! Licences: the import's rules (a user's lines replace theirs, `file:line` refusals, a second
//! import of the same files changes nothing) and the per-user access check for every role.

use super::*;
use crate::data::import::{import_dir, ImportError};

pub(crate) const ME: &str = "aaaaaaaa-0000-0000-0000-000000000001";
pub(crate) const MANAGED: &str = "aaaaaaaa-0000-0000-0000-000000000002";
pub(crate) const OTHER: &str = "aaaaaaaa-0000-0000-0000-000000000003";
pub(crate) const CONCIERGE: &str = "aaaaaaaa-0000-0000-0000-000000000004";
const UNKNOWN: &str = "aaaaaaaa-0000-0000-0000-0000000000ff";

pub(crate) fn agents() -> String {
    [
        format!(r#"{{"id":"{ME}","email":"me@x.test","roles":["Agent"]}}"#),
        format!(r#"{{"id":"{MANAGED}","email":"m@x.test","roles":["Agent"]}}"#),
        format!(r#"{{"id":"{OTHER}","email":"o@x.test","roles":["Processor"]}}"#),
        format!(
            r#"{{"id":"{CONCIERGE}","email":"c@x.test","roles":["ConciergeKey"],"managedAgentIds":["{MANAGED}"]}}"#
        ),
    ]
    .join("\n")
}

pub(crate) fn license(user: &str, state: &str, year: &str) -> String {
    format!(
        r#"{{"userId":"{user}","state":"{state}","stateLicenseNumber":"{state}-1","expirationYear":"{year}"}}"#
    )
}

/// A database with `files` ((name, text)) imported.
pub(crate) async fn imported(files: &[(&str, String)]) -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&format!("sqlite://{}", dir.path().join("t.db").display()))
        .await
        .unwrap();
    import(&db, dir.path(), files).await.unwrap();
    (dir, db)
}

pub(crate) async fn import(
    db: &Db,
    dir: &std::path::Path,
    files: &[(&str, String)],
) -> Result<(), ImportError> {
    let folder = dir.join(format!("in-{}", files.len()));
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).unwrap();
    for (name, text) in files {
        std::fs::write(folder.join(name), text).unwrap();
    }
    import_dir(db, &folder, |_, _| {}).await.map(|_| ())
}

fn states(ls: &[License]) -> Vec<(&str, Option<&str>)> {
    ls.iter()
        .map(|l| (l.state.as_str(), l.expiration_year.as_deref()))
        .collect()
}

#[tokio::test]
async fn a_users_lines_replace_their_licences_and_a_second_import_changes_nothing() {
    // Arrange
    let first = [
        license(ME, "TX", "2027"),
        license(ME, "CA", "2025"),
        license(MANAGED, "FL", "2026"),
    ]
    .join("\n");
    let (dir, db) = imported(&[
        ("agents.jsonl", agents()),
        ("user_licenses.jsonl", first.clone()),
    ])
    .await;
    // Act: the same file again, then a file naming only ME (TX renewed, WA new).
    import(&db, dir.path(), &[("user_licenses.jsonl", first)])
        .await
        .unwrap();
    let again = states(&licenses_of(&db, ME).await.unwrap()).len();
    let second = [license(ME, "TX", "2029"), license(ME, "WA", "2027")].join("\n");
    import(&db, dir.path(), &[("user_licenses.jsonl", second)])
        .await
        .unwrap();
    // Assert
    assert_eq!(again, 2);
    assert_eq!(
        states(&licenses_of(&db, ME).await.unwrap()),
        vec![("TX", Some("2029")), ("WA", Some("2027"))]
    );
    assert_eq!(
        states(&licenses_of(&db, MANAGED).await.unwrap()),
        vec![("FL", Some("2026"))],
        "a user the file does not name keeps theirs"
    );
}

#[tokio::test]
async fn a_bad_line_is_refused_with_its_file_and_line_and_nothing_is_kept() {
    // Arrange
    let (dir, db) = imported(&[("agents.jsonl", agents())]).await;
    let cases = [
        (
            r#"{"userId":"nope","state":"TX"}"#.to_string(),
            "userId: `nope` is not a UUID",
        ),
        (
            format!(r#"{{"userId":"{ME}","state":"Texas"}}"#),
            "state: `Texas` is not a two-letter state code",
        ),
        (
            format!(r#"{{"userId":"{ME}","state":"TX","expirationYear":"27"}}"#),
            "expirationYear: `27` is not a year",
        ),
        (format!(r#"{{"userId":"{ME}"}}"#), "missing field `state`"),
    ];
    for (bad, reason) in cases {
        let text = [license(ME, "TX", "2027"), bad].join("\n");
        // Act
        let e = import(&db, dir.path(), &[("user_licenses.jsonl", text)])
            .await
            .unwrap_err();
        // Assert
        let message = e.to_string();
        assert!(message.starts_with("user_licenses.jsonl:2: "), "{message}");
        assert!(message.contains(reason), "{message}");
        assert!(
            licenses_of(&db, ME).await.unwrap().is_empty(),
            "the good line was not kept"
        );
    }
}

#[tokio::test]
async fn each_role_reads_the_licences_the_per_user_check_allows() {
    // Arrange
    let lines = [
        license(ME, "TX", "2027"),
        license(MANAGED, "FL", "2026"),
        license(OTHER, "CA", "2026"),
    ]
    .join("\n");
    let (_dir, db) = imported(&[("agents.jsonl", agents()), ("user_licenses.jsonl", lines)]).await;
    let admin = Identity::new("aaaaaaaa-0000-0000-0000-0000000000ad", [RoleCode::Admin]);
    let concierge = Identity::new(CONCIERGE, [RoleCode::ConciergeKey]);
    let processor = Identity::new(OTHER, [RoleCode::Processor]);
    let agent = Identity::new(ME, [RoleCode::Agent]);
    // Act + Assert: (caller, user, allowed)
    for (caller, user, allowed) in [
        (&agent, ME, true),
        (&agent, MANAGED, false),
        (&admin, OTHER, true),
        (&admin, UNKNOWN, false),
        (&concierge, MANAGED, true),
        (&concierge, ME, false),
        (&processor, OTHER, true),
        (&processor, ME, false),
    ] {
        let got = readable(&db, caller, user).await.unwrap();
        assert_eq!(got.is_some(), allowed, "{:?} reading {user}", caller.roles);
    }
    assert_eq!(
        states(&readable(&db, &admin, OTHER).await.unwrap().unwrap()),
        vec![("CA", Some("2026"))]
    );
}
