//! Unit tests of manifests: every rule refused with the field named, and a property test that
//! every accepted manifest keeps every rule.

use super::*;

const GOOD: &str = r#"
name = "report_loans"
wit_version = "1.0.0"
roles = ["Admin", "Agent"]
datasets = ["loans"]
scope = "caller"
[limits]
memory_mib = 32
timeout_ms = 2000
max_output_bytes = 100000
"#;

fn err(text: &str) -> String {
    Manifest::parse(text, Some("report_loans")).unwrap_err()
}

#[test]
fn good_manifest_parses() {
    let m = Manifest::parse(GOOD, Some("report_loans")).unwrap();
    assert_eq!(m.roles, vec![RoleCode::Admin, RoleCode::Agent]);
    assert_eq!(m.limits.timeout_ms, 2000);
    assert!(m.grant(Dataset::Loans).is_some());
}

#[test]
fn syntax_error_names_the_line() {
    let e = err(&GOOD.replace("scope = \"caller\"", "scope = caller"));
    assert!(e.starts_with("line 6: "), "{e}");
}

#[test]
fn missing_field_is_named() {
    let e = err(&GOOD.replace("roles = [\"Admin\", \"Agent\"]\n", ""));
    assert!(e.contains("missing field `roles`"), "{e}");
}

#[test]
fn unknown_field_is_named() {
    let e = err(&GOOD.replace("scope = ", "colour = 1\nscope = "));
    assert!(e.contains("unknown field `colour`"), "{e}");
}

#[test]
fn wrong_type_is_named() {
    let e = err(&GOOD.replace("memory_mib = 32", "memory_mib = \"lots\""));
    assert_eq!(
        e,
        "limits.memory_mib: invalid type: string \"lots\", expected u32"
    );
}

#[test]
fn unknown_role_is_named_with_index() {
    let e = err(&GOOD.replace("\"Agent\"]", "\"Agnet\"]"));
    assert!(e.starts_with("roles[1]: unknown role code `Agnet`"), "{e}");
}

#[test]
fn name_must_match_file() {
    let e = Manifest::parse(GOOD, Some("other")).unwrap_err();
    assert_eq!(
        e,
        "name: `report_loans` does not match the file name `other.toml`"
    );
}

#[test]
fn org_wide_only_for_warehouse() {
    let e = err(&GOOD.replace("scope = \"caller\"", "scope = \"org-wide\""));
    assert!(e.starts_with("scope: \"org-wide\" is allowed only"), "{e}");
    let e = err(&GOOD.replace("[\"loans\"]", "[\"dw-deals\"]"));
    assert!(e.starts_with("datasets: `dw-deals` is an org-wide"), "{e}");
}

#[test]
fn limits_are_bounded() {
    let e = err(&GOOD.replace("timeout_ms = 2000", "timeout_ms = 0"));
    assert_eq!(e, "limits.timeout_ms: 0 is outside 1..=60000");
    let e = err(&GOOD.replace("memory_mib = 32", "memory_mib = 4096"));
    assert_eq!(e, "limits.memory_mib: 4096 is outside 1..=512");
}

#[test]
fn bad_wit_version() {
    let e = err(&GOOD.replace("\"1.0.0\"", "\"1.0\""));
    assert_eq!(e, "wit_version: `1.0` is not a version like `1.0.0`");
}

#[test]
fn semver() {
    assert_eq!(semver_triple("1.2.3"), Some((1, 2, 3)));
    assert_eq!(semver_triple("01.2.3"), None);
    assert_eq!(semver_triple("1.2"), None);
    assert_eq!(semver_triple("1.2.3.4"), None);
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    /// A line a manifest might hold, valid or not.
    fn line() -> impl Strategy<Value = String> {
        let key = prop_oneof![
            Just("name"),
            Just("wit_version"),
            Just("roles"),
            Just("datasets"),
            Just("scope"),
            Just("memory_mib"),
            Just("timeout_ms"),
            Just("max_output_bytes"),
            Just("max_queries"),
            Just("max_rows"),
            Just("max_data_bytes"),
            Just("db_time_ms"),
            Just("[limits]"),
            Just("colour"),
        ];
        let value = prop_oneof![
            any::<i64>().prop_map(|i| i.to_string()),
            Just("\"report_loans\"".to_string()),
            Just("\"1.0.0\"".to_string()),
            Just("[\"Admin\", \"Agent\"]".to_string()),
            Just("[\"loans\", \"dw-deals\"]".to_string()),
            Just("\"org-wide\"".to_string()),
            Just("\"caller\"".to_string()),
            ".{0,10}",
        ];
        (key, value).prop_map(|(k, v)| {
            if k.starts_with('[') {
                k.to_string()
            } else {
                format!("{k} = {v}")
            }
        })
    }

    proptest! {
        #[test]
        fn fuzz_arbitrary_text_never_panics(text in ".{0,400}") {
            let _ = Manifest::parse(&text, Some("report_loans"));
        }

        #[test]
        fn fuzz_a_manifest_that_parses_keeps_every_rule(
            lines in prop::collection::vec(line(), 0..14),
            at in 0usize..12,
        ) {
            // A good manifest with lines inserted at a random place.
            let mut all: Vec<String> = GOOD.lines().map(str::to_string).collect();
            let at = at.min(all.len());
            for l in lines.into_iter().rev() {
                all.insert(at, l);
            }
            match Manifest::parse(&all.join("\n"), Some("report_loans")) {
                Ok(m) => {
                    prop_assert_eq!(m.name.as_str(), "report_loans");
                    prop_assert!(!m.roles.is_empty());
                    let l = m.limits;
                    prop_assert!((1..=MAX_MEMORY_MIB).contains(&l.memory_mib));
                    prop_assert!((1..=MAX_TIMEOUT_MS).contains(&l.timeout_ms));
                    prop_assert!((1..=MAX_OUTPUT_BYTES).contains(&l.max_output_bytes));
                    prop_assert!((1..=MAX_MAX_QUERIES).contains(&l.max_queries));
                    prop_assert!((1..=MAX_MAX_ROWS).contains(&l.max_rows));
                    prop_assert!((1..=MAX_MAX_DATA_BYTES).contains(&l.max_data_bytes));
                    prop_assert!((1..=MAX_DB_TIME_MS).contains(&l.db_time_ms));
                    if m.scope == Scope::OrgWide {
                        prop_assert!(m.roles.iter().all(|r| ORG_WIDE_ROLES.contains(r)));
                        prop_assert!(m.datasets().all(|d| d.is_org_wide()));
                    } else {
                        prop_assert!(m.datasets().all(|d| !d.is_org_wide()));
                    }
                }
                Err(e) => prop_assert!(!e.is_empty()),
            }
        }
    }
}

#[test]
fn a_view_is_declared_in_its_own_table() {
    let m = Manifest::parse(
        &format!("{GOOD}\n[view]\ntitle = \"Loans by bucket\"\nprefers_border = true\n"),
        Some("report_loans"),
    )
    .unwrap();
    let view = m.view.clone().unwrap();
    assert_eq!(view.title.as_deref(), Some("Loans by bucket"));
    assert_eq!(view.prefers_border, Some(true));
    assert_eq!(view.description, None);
    assert_eq!(m.view_file(), "report_loans.html");
    assert_eq!(
        Manifest::parse(GOOD, Some("report_loans")).unwrap().view,
        None
    );
    assert_eq!(
        err(&format!("{GOOD}\n[view]\nfile = \"x.html\"\n")),
        "view.file: unknown field `file`, expected one of `title`, `description`, `prefers_border`"
    );
    assert_eq!(
        err(&format!("{GOOD}\n[view]\ntitle = \"\"\n")),
        "view.title: must be one line of 1 to 512 characters"
    );
}

/// `GOOD` with `[datasets.loans]` in place of its list of datasets.
fn with_grant(grant: &str) -> String {
    GOOD.replace("datasets = [\"loans\"]\n", "") + "[datasets.loans]\n" + grant
}

#[test]
fn a_dataset_grant_names_its_fields_and_whether_it_lists() {
    // Arrange
    let text = with_grant("fields = [\"status\", \"loanAmount\", \"id\"]\nlisting = true\n");

    // Act
    let m = Manifest::parse(&text, Some("report_loans")).unwrap();

    // Assert
    let g = m.grant(Dataset::Loans).unwrap();
    assert!(g.listing);
    assert_eq!(
        g.fields.iter().map(String::as_str).collect::<Vec<_>>(),
        ["id", "loanAmount", "status"]
    );
    let plain = Manifest::parse(&with_grant("fields = []\n"), Some("report_loans")).unwrap();
    assert!(!plain.grant(Dataset::Loans).unwrap().listing);
}

#[test]
fn a_list_of_datasets_grants_every_field_for_aggregates_only() {
    let m = Manifest::parse(GOOD, Some("report_loans")).unwrap();
    let g = m.grant(Dataset::Loans).unwrap();
    assert!(!g.listing);
    assert!(g.names("loanAmount") && g.names("id") && g.names("loanOfficerName"));
}

#[test]
fn a_grant_is_refused_naming_its_key() {
    for (grant, expected) in [
        (
            "fields = [\"status\", \"borrowerEmail\"]\n",
            "datasets.loans.fields[1]: unknown field `borrowerEmail` of dataset `loans`",
        ),
        (
            "fields = [\"status\", \"status\"]\n",
            "datasets.loans.fields[1]: `status` is named twice",
        ),
        ("listing = true\n", "datasets.loans: missing `fields`"),
        (
            "fields = [\"status\"]\nlisting = \"yes\"\n",
            "datasets.loans.listing: expected true or false",
        ),
        (
            "fields = [\"status\"]\nrows = 5\n",
            "datasets.loans.rows: unknown key",
        ),
        (
            "fields = \"status\"\n",
            "datasets.loans.fields: expected a list",
        ),
    ] {
        let e = err(&with_grant(grant));
        assert!(e.starts_with(expected), "{grant}: {e}");
    }
    let e = err(&GOOD.replace("[\"loans\"]", "[\"loans\", 3]"));
    assert!(e.starts_with("datasets[1]: expected a dataset name"), "{e}");
    let e = err(&GOOD.replace("[\"loans\"]", "\"loans\""));
    assert!(
        e.starts_with("datasets: expected a table per dataset"),
        "{e}"
    );
    let e = err(&(GOOD.replace("datasets = [\"loans\"]\n", "") + "[datasets.loan]\nfields = []\n"));
    assert!(
        e.starts_with("datasets.loan: unknown dataset `loan`"),
        "{e}"
    );
}
