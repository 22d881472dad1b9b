//! Every shared model against the spec, as transcribed by hand in `tests/examples.json`: a full
//! example round-trips unchanged, every nullable field accepts `null`, every other field is
//! required and refuses `null`, closed models refuse an extra property by name, and each
//! model's JSON Schema (the API description's) has the spec's field names, required fields,
//! closedness and read-only marks.

use std::collections::BTreeSet;

use loanhost_models::*;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Value};

fn fixture() -> Map<String, Value> {
    let mut m: Map<String, Value> =
        serde_json::from_str(include_str!("examples.json")).expect("examples.json is JSON");
    m.remove("_about");
    m
}

/// The models with fields (everything but the `ContactRole` enumeration).
fn models() -> Vec<(String, Value)> {
    fixture()
        .into_iter()
        .filter(|(_, v)| v.get("example").is_some())
        .collect()
}

/// Replaces every `{"$example": "Name"}` with that model's example; a model met again inside
/// itself (`Borrower.coBorrower`) is expanded once more without its recursive field.
fn expand(v: &Value, all: &Map<String, Value>, path: &mut Vec<String>) -> Value {
    match v {
        Value::Object(o) => {
            if let Some(Value::String(name)) = o.get("$example") {
                let mut example = all[name]["example"].clone();
                if path.contains(name) {
                    let o = example.as_object_mut().unwrap();
                    let optional: Vec<String> = all[name]["optional"]
                        .as_array()
                        .map(|a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect())
                        .unwrap_or_default();
                    o.retain(|k, _| !optional.contains(k));
                }
                path.push(name.clone());
                let out = expand(&example, all, path);
                path.pop();
                return out;
            }
            Value::Object(
                o.iter()
                    .map(|(k, v)| (k.clone(), expand(v, all, path)))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(|v| expand(v, all, path)).collect()),
        other => other.clone(),
    }
}

fn example(name: &str) -> Value {
    let all = fixture();
    expand(&all[name]["example"], &all, &mut vec![name.to_string()])
}

fn strings(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

fn rt<T: DeserializeOwned + Serialize>(doc: &Value) -> Result<Value, String> {
    let t: T = serde_json::from_str(&doc.to_string()).map_err(|e| e.to_string())?;
    Ok(serde_json::to_value(&t).expect("a model serializes"))
}

/// Reads `doc` as the model named `name` (from its wire text) and writes it back.
fn round_trip(name: &str, doc: &Value) -> Result<Value, String> {
    macro_rules! by_name {
        ($($t:ident),* $(,)?) => {
            match name {
                $(stringify!($t) => rt::<$t>(doc),)*
                other => panic!("no type for the spec's model {other}"),
            }
        };
    }
    with_shared_models!(by_name)
}

#[test]
fn full_examples_round_trip_unchanged() {
    for (name, _) in models() {
        // Arrange
        let doc = example(&name);
        // Act
        let back = round_trip(&name, &doc).unwrap_or_else(|e| panic!("{name}: {e}"));
        // Assert
        assert_eq!(back, doc, "{name} changed on the way through");
    }
}

#[test]
fn the_co_borrower_chain_round_trips_and_ends() {
    let doc = example("Borrower");
    assert!(doc["coBorrower"].is_object());
    assert!(doc["coBorrower"].get("coBorrower").is_none());
    let mut null = doc.clone();
    null["coBorrower"] = Value::Null;
    let e = round_trip("Borrower", &null).unwrap_err();
    assert!(e.contains("invalid type: null"), "{e}");
}

#[test]
fn every_nullable_field_accepts_null() {
    for (name, spec) in models() {
        // Arrange: every field the spec does not make required set to null.
        let required = strings(&spec["required"]);
        let optional = strings(&spec["optional"]);
        let mut doc = example(&name);
        let o = doc.as_object_mut().unwrap();
        o.retain(|k, _| !optional.contains(k));
        if spec["open"] != json!(true) {
            for (k, v) in o.iter_mut() {
                if !required.contains(k) {
                    *v = Value::Null;
                }
            }
        }
        // Act
        let back = round_trip(&name, &doc).unwrap_or_else(|e| panic!("{name}: {e}"));
        // Assert
        assert_eq!(back, doc, "{name} with nulls changed on the way through");
    }
}

#[test]
fn nullable_fields_may_be_left_out_and_come_back_as_null() {
    for (name, spec) in models() {
        if spec["open"] == json!(true) {
            continue;
        }
        let required = strings(&spec["required"]);
        let optional = strings(&spec["optional"]);
        let full = example(&name);
        let mut doc = full.clone();
        doc.as_object_mut()
            .unwrap()
            .retain(|k, _| required.contains(k));
        let back = round_trip(&name, &doc).unwrap_or_else(|e| panic!("{name}: {e}"));
        for (k, _) in full.as_object().unwrap() {
            if optional.contains(k) {
                assert!(back.get(k).is_none(), "{name}.{k}");
            } else if !required.contains(k) && spec["closed"] == json!(true) {
                assert_eq!(back[k], Value::Null, "{name}.{k}");
            }
        }
    }
}

#[test]
fn fields_that_are_not_nullable_are_required_and_refuse_null() {
    for (name, spec) in models() {
        for field in strings(&spec["required"]) {
            let mut doc = example(&name);
            doc[&field] = Value::Null;
            round_trip(&name, &doc).expect_err(&format!("{name}.{field} took null"));
            doc.as_object_mut().unwrap().remove(&field);
            let e = round_trip(&name, &doc).expect_err(&format!("{name}.{field} may be missing"));
            assert!(
                e.contains(&format!("missing field `{field}`")),
                "{name}.{field}: {e}"
            );
        }
    }
}

#[test]
fn closed_models_refuse_an_extra_property_by_name_and_open_ones_keep_it() {
    for (name, spec) in models() {
        // Arrange
        let mut doc = example(&name);
        doc["unexpectedProperty"] = json!("x");
        // Act
        let got = round_trip(&name, &doc);
        // Assert
        if spec["closed"] == json!(true) {
            let e = got.expect_err(&format!("{name} took an extra property"));
            assert!(
                e.contains("unknown field `unexpectedProperty`"),
                "{name}: {e}"
            );
        } else {
            assert_eq!(got.unwrap(), doc, "{name} lost its extra property");
        }
    }
}

#[test]
fn formats_are_checked() {
    let cases = [
        ("Application", "id", json!("not-a-uuid"), "UUID"),
        (
            "Document",
            "createdTimestamp",
            json!("2026-02-30T00:00:00Z"),
            "date-time",
        ),
        (
            "LoanEstimateDates",
            "issuedDate",
            json!("02/02/2026"),
            "date",
        ),
        ("MilestoneSummary", "order", json!(2147483648_i64), "i32"),
        ("Asset", "amount", json!("25000.50"), "f64"),
        ("GetLoanApplicationResponse", "timestamp", json!(1.5), "i64"),
    ];
    for (name, field, value, what) in cases {
        let mut doc = example(name);
        doc[field] = value;
        assert!(
            round_trip(name, &doc).is_err(),
            "{name}.{field} is a {what}"
        );
    }
}

#[test]
fn contact_role_has_the_spec_values_in_order() {
    let spec: Vec<String> = fixture()["ContactRole"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    let schema = catalog::schemas()["ContactRole"].clone();
    let listed: Vec<String> = schema["enum"]
        .as_array()
        .expect("ContactRole is a string enumeration")
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(listed, spec);
    for v in &spec {
        let role: ContactRole = serde_json::from_value(json!(v)).unwrap();
        assert_eq!(serde_json::to_value(role).unwrap(), json!(v));
    }
    let e = serde_json::from_value::<ContactRole>(json!("loanOfficer")).unwrap_err();
    assert!(
        e.to_string().contains("unknown variant `loanOfficer`"),
        "{e}"
    );
}

fn is_nullable(schema: &Value) -> bool {
    let t = &schema["type"];
    t.as_array().is_some_and(|a| a.contains(&json!("null")))
        || schema["anyOf"]
            .as_array()
            .is_some_and(|a| a.contains(&json!({"type": "null"})))
}

#[test]
fn each_model_schema_has_the_spec_fields_required_fields_and_closedness() {
    let schemas = catalog::schemas();
    for (name, spec) in models() {
        let schema = &schemas[&name];
        assert_eq!(schema["type"], json!("object"), "{name}");
        let example = fixture()[&name]["example"].clone();
        if spec["open"] == json!(true) {
            assert!(schema.get("properties").is_none(), "{name}");
            assert_eq!(schema["additionalProperties"], json!(true), "{name}");
            continue;
        }
        let props = schema["properties"].as_object().unwrap();
        let mut fields: BTreeSet<String> = example.as_object().unwrap().keys().cloned().collect();
        if spec["closed"] != json!(true) {
            // The example of an open model also carries an extension property or two.
            fields.retain(|f| props.contains_key(f));
            assert_eq!(schema["additionalProperties"], json!(true), "{name}");
        } else {
            assert_eq!(schema["additionalProperties"], json!(false), "{name}");
        }
        let names: BTreeSet<String> = props.keys().cloned().collect();
        assert_eq!(names, fields, "{name}: fields");
        assert_eq!(
            strings(&schema["required"]),
            strings(&spec["required"]),
            "{name}: required"
        );
        let required = strings(&spec["required"]);
        let optional = strings(&spec["optional"]);
        for (field, s) in props {
            let expect_null = !required.contains(field) && !optional.contains(field);
            assert_eq!(is_nullable(s), expect_null, "{name}.{field}: nullable");
        }
        for field in strings(&spec["readOnly"]) {
            assert_eq!(props[&field]["readOnly"], json!(true), "{name}.{field}");
        }
    }
}

#[test]
fn formats_in_the_schemas_are_the_spec_formats() {
    let s = catalog::schemas();
    assert_eq!(s["Application"]["properties"]["id"]["format"], "uuid");
    assert_eq!(
        s["NotificationSettingsDocument"]["properties"]["updatedAt"]["format"],
        "date-time"
    );
    assert_eq!(
        s["LoanEstimateDates"]["properties"]["issuedDate"]["format"],
        "date"
    );
    assert_eq!(
        s["MilestoneSummary"]["properties"]["order"]["format"],
        "int32"
    );
    assert_eq!(
        s["GetLoanApplicationResponse"]["properties"]["timestamp"]["format"],
        "int64"
    );
    assert_eq!(s["Asset"]["properties"]["amount"]["format"], "double");
    assert_eq!(
        s["Borrower"]["properties"]["coBorrower"]["$ref"],
        "#/components/schemas/Borrower"
    );
}

#[test]
fn the_list_of_models_is_the_spec_list() {
    macro_rules! names {
        ($($t:ident),* $(,)?) => { vec![$(stringify!($t)),*] };
    }
    let listed: BTreeSet<&str> = with_shared_models!(names).into_iter().collect();
    let spec = fixture();
    let transcribed: BTreeSet<&str> = spec.keys().map(String::as_str).collect();
    assert_eq!(listed, transcribed);
}
