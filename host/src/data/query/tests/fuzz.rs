use super::*;
use crate::data::query::columns::P;
use proptest::prelude::*;

const FILTER_KEYS: [&str; 19] = [
    "searchText",
    "statuses",
    "loanTypes",
    "purposes",
    "statusDateFrom",
    "statusDateTo",
    "closingDateFrom",
    "closingDateTo",
    "updatedFrom",
    "updatedTo",
    "loanOfficerIds",
    "referringAgentId",
    "processorId",
    "loanAmountMin",
    "loanAmountMax",
    "commissionMin",
    "commissionMax",
    "propertyState",
    "officer",
];

/// Hostile text: quotes, comment markers, placeholders, wildcards, unicode.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9 '\"%_\\\\;?$-]{0,24}",
        Just("x'); DROP TABLE loans; --".to_string()),
        Just("2026-01-31".to_string()),
        Just("00000000-0000-0000-0000-0000000000b2".to_string()),
        Just("12.5".to_string()),
        ".{0,8}",
    ]
}

fn filter_value() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        text().prop_map(serde_json::Value::String),
        prop::collection::vec(text(), 0..4).prop_map(|v| serde_json::json!(v)),
        any::<i32>().prop_map(|i| serde_json::json!(i)),
        Just(serde_json::Value::Null),
        Just(serde_json::json!({"nested": true})),
    ]
}

fn filter() -> impl Strategy<Value = String> {
    prop::collection::vec(
        (prop::sample::select(FILTER_KEYS.to_vec()), filter_value()),
        0..6,
    )
    .prop_map(|kv| {
        serde_json::Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            .to_string()
    })
}

fn key() -> impl Strategy<Value = Key> {
    let field = prop::sample::select(vec![
        "status",
        "loanType",
        "statusDate",
        "loanOfficerName",
        "nope",
        "loanAmount",
    ]);
    prop_oneof![
        field.clone().prop_map(|f| Key::Field(f.to_string())),
        field
            .clone()
            .prop_map(|f| Key::Period(f.to_string(), PeriodUnit::Week)),
        (
            field,
            prop::collection::vec((text(), text()), 0..3),
            prop::option::of(text())
        )
            .prop_map(|(f, e, o)| Key::Mapped(f.to_string(), e, o)),
    ]
}

proptest! {
    #[test]
    fn fuzz_compiled_sql_holds_no_input_text(
        filter in prop::option::of(filter()),
        keys in prop::collection::vec(key(), 0..3),
        value in text(),
        postgres in any::<bool>(),
        names in any::<bool>(),
    ) {
        let mut query = q(Dataset::Loans);
        query.filter = filter;
        query.group_by = keys;
        query.predicates.push(("loanNumber".into(), Condition::Eq(Value::Text(value))));
        let scope = Scope { originated_by: Some("00000000-0000-0000-0000-0000000000b2".into()), ..Default::default() };
        match compile(&query, Some(&scope), names, postgres) {
            Ok(c) => {
                // Every value is a bound parameter: as many `?` as parameters, and no
                // parameter's text in the SQL.
                prop_assert_eq!(c.sql.matches('?').count(), c.params.len());
                for p in &c.params {
                    if let P::T(t) = p {
                        let t = t.trim_matches('%');
                        if t.len() >= 4 && t.chars().any(|ch| !ch.is_ascii_alphanumeric() || ch.is_ascii_uppercase()) {
                            prop_assert!(!c.sql.contains(t), "{} in {}", t, c.sql);
                        }
                    }
                }
                prop_assert!(c.sql.contains("l.loan_officer_id = ?"), "scope missing: {}", c.sql);
            }
            Err(QueryError::Invalid(m) | QueryError::Denied(m)) => prop_assert!(!m.is_empty()),
            Err(e) => prop_assert!(false, "unexpected error {e:?}"),
        }
    }
}
