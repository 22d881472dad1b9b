//! The import's loan applications (schema v21, decision 0046): `loan_applications.jsonl`
//! lines, one application of one loan each. A line that carries a borrower's sensitive data
//! (anywhere in it) is refused, so the store never holds it; every part is checked against the
//! shared models with a message that names its path; the readiness the search filters on is
//! computed here by the specification's rules. A later line for the same loan replaces the
//! application whole.

use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};

use loanhost_models::application_parts::{
    check_sections, readiness, report, Section, Task, TimelineEvent,
};
use loanhost_models::{Application, Contact, Document};

use super::parse::{Fields, Record};
use super::tables::V;
use super::tx::Tx;
use super::write::{last_per_id, upsert_tail, with_keys};
use super::ImportError;

/// The keys that hold a borrower's sensitive data, refused at any depth of a line with any
/// value but `null` (decision 0046): no tool, REST path, log, backup or dump can hold them.
pub const SENSITIVE_KEYS: [&str; 11] = [
    "ssn",
    "encryptedSsn",
    "birthDate",
    "demographics",
    "declaration",
    "creditScores",
    "hmdaApplicantCreditScore",
    "fico",
    "softCreditExternalId",
    "accountNumber",
    "updatedByIp",
];

/// The keys of a stored borrower (the specification's `Borrower` without the sensitive ones).
const BORROWER_KEYS: [&str; 28] = [
    "hdBorrowerId",
    "clientId",
    "externalId",
    "externalLabel",
    "firstName",
    "lastName",
    "middleName",
    "contacts",
    "maritalStatus",
    "citizenship",
    "language",
    "isMilitary",
    "currentAddress",
    "mailingAddress",
    "previousAddresses",
    "ownedProperties",
    "employments",
    "otherIncomes",
    "liabilities",
    "veteranDetail",
    "creditAuthorizationDate",
    "isBeta",
    "isPrimary",
    "borrowerType",
    "assets",
    "numberOfDependents",
    "dependentAges",
    "coBorrower",
];

/// The keys of a line.
const LINE_KEYS: [&str; 22] = [
    "id",
    "loanId",
    "losType",
    "isSubmitted",
    "isLoanEditable",
    "isSetupComplete",
    "isDeleted",
    "skipStatedIncomePreapproval",
    "startStatedIncomePreapproval",
    "timestamp",
    "createdTimestampUtc",
    "updatedTimestampUtc",
    "updatedBy",
    "updatedByEmail",
    "updatedByFirstName",
    "updatedByLastName",
    "referredBy",
    "borrower",
    "sections",
    "tasks",
    "documents",
    "contacts",
];

/// The keys a line may carry besides [`LINE_KEYS`].
const MORE_LINE_KEYS: [&str; 1] = ["timeline"];

/// The columns written, in order (the loan's key first).
const COLUMNS: [&str; 15] = [
    "loan_key",
    "id",
    "status",
    "created",
    "updated",
    "application",
    "updated_by_name",
    "borrower",
    "sections",
    "tasks",
    "documents",
    "timeline",
    "contacts",
    "contact_roles",
    "referred_by",
];

/// The first key holding sensitive data in `v` (with a value other than `null`), as a path.
pub fn sensitive_path(v: &Value, at: &str) -> Option<String> {
    match v {
        Value::Object(map) => map.iter().find_map(|(k, v)| {
            let path = match at.is_empty() {
                true => k.clone(),
                false => format!("{at}.{k}"),
            };
            match SENSITIVE_KEYS.contains(&k.as_str()) && !v.is_null() {
                true => Some(path),
                false => sensitive_path(v, &path),
            }
        }),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| sensitive_path(v, &format!("{at}[{i}]"))),
        _ => None,
    }
}

/// A `loan_applications.jsonl` line.
pub(super) fn application(map: &Map<String, Value>) -> Result<Record, String> {
    if let Some(path) = sensitive_path(&Value::Object(map.clone()), "") {
        return Err(format!(
            "field {path} holds a borrower's sensitive data; loanhost does not store it \
             (leave it out or null)"
        ));
    }
    if let Some(unknown) = map
        .keys()
        .find(|k| !LINE_KEYS.contains(&k.as_str()) && !MORE_LINE_KEYS.contains(&k.as_str()))
    {
        return Err(format!(
            "unknown field `{unknown}`; fields: {}, {}",
            LINE_KEYS.join(", "),
            MORE_LINE_KEYS.join(", ")
        ));
    }
    let r = Fields(map);
    let id = r.uuid("id")?;
    let loan = r.uuid("loanId")?;
    let flag = |k: &str| -> Result<bool, String> { Ok(r.opt_bool(k)?.unwrap_or(false)) };
    let submitted = flag("isSubmitted")?;
    let created_text = r.string("createdTimestampUtc")?;
    let created = r.instant("createdTimestampUtc")?;
    let updated = r.opt_instant("updatedTimestampUtc")?;
    let los: Application = part(map, "losType")?.ok_or("missing field `losType`")?;
    let sections: Vec<Section> = part(map, "sections")?.unwrap_or_default();
    check_sections(&sections)?;
    let tasks: Vec<Task> = part(map, "tasks")?.unwrap_or_default();
    for (i, t) in tasks.iter().enumerate() {
        if t.title.trim().is_empty() {
            return Err(format!("tasks[{i}].title: must not be empty"));
        }
    }
    let documents: Vec<Document> = part(map, "documents")?.unwrap_or_default();
    let contacts: Vec<Contact> = part(map, "contacts")?.unwrap_or_default();
    let referred: Option<Contact> = part(map, "referredBy")?;
    let timeline: Vec<TimelineEvent> = part(map, "timeline")?.unwrap_or_default();
    let borrower = borrower(map.get("borrower"), "borrower")?;
    let numbers = |k: &str| -> Result<Option<i64>, String> {
        match r.get(k) {
            None => Ok(None),
            Some(Value::Number(n)) => n
                .as_i64()
                .map(Some)
                .ok_or_else(|| format!("{k}: `{n}` is not a whole number")),
            Some(other) => Err(format!("{k}: expected a whole number, got {other}")),
        }
    };
    let status = readiness(&report(&sections, &tasks, submitted), submitted);
    let application = json!({
        "losType": los,
        "isSubmitted": submitted,
        "isLoanEditable": flag("isLoanEditable")?,
        "isSetupComplete": flag("isSetupComplete")?,
        "isDeleted": flag("isDeleted")?,
        "skipStatedIncomePreapproval": r.opt_bool("skipStatedIncomePreapproval")?,
        "startStatedIncomePreapproval": r.opt_bool("startStatedIncomePreapproval")?,
        "timestamp": numbers("timestamp")?,
        "createdTimestampUtc": created_text,
        "updatedTimestampUtc": r.opt_string("updatedTimestampUtc")?,
        "updatedBy": r.opt_uuid("updatedBy")?,
    });
    let updated_by = json!({
        "updatedByEmail": r.opt_string("updatedByEmail")?,
        "updatedByFirstName": r.opt_string("updatedByFirstName")?,
        "updatedByLastName": r.opt_string("updatedByLastName")?,
    });
    let roles: Vec<Value> = contacts
        .iter()
        .map(|c| json!({"id": c.id, "role": c.role, "roleName": c.role_name}))
        .collect();
    Ok(Record::Row(vec![
        V::T(Some(loan)),
        V::T(Some(id)),
        V::T(Some(status.to_string())),
        V::I(Some(created)),
        V::I(Some(updated.unwrap_or(created))),
        text(&application),
        text(&updated_by),
        text(&borrower),
        text(&sections),
        text(&tasks),
        text(&documents),
        text(&timeline),
        text(&contacts),
        text(&roles),
        text(&referred),
    ]))
}

/// A part as its stored JSON text.
fn text<T: serde::Serialize>(part: &T) -> V {
    V::T(Some(
        serde_json::to_string(part).expect("a validated part serialises"),
    ))
}

/// The part `k` of a line read as a `T` (absent or `null`: `None`), its errors naming the
/// path within it.
fn part<T: DeserializeOwned>(map: &Map<String, Value>, k: &str) -> Result<Option<T>, String> {
    match map.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => {
            let mut track = serde_path_to_error::Track::new();
            let de = serde_path_to_error::Deserializer::new(v.clone(), &mut track);
            T::deserialize(de).map(Some).map_err(|e| {
                let path = track.path().to_string();
                match path.as_str() {
                    "." | "" => format!("{k}: {e}"),
                    p if p.starts_with('[') => format!("{k}{p}: {e}"),
                    p => format!("{k}.{p}: {e}"),
                }
            })
        }
    }
}

/// A stored borrower: an object of [`BORROWER_KEYS`] (names text, `isPrimary` a boolean, a
/// co-borrower a borrower itself), kept as given.
fn borrower(v: Option<&Value>, at: &str) -> Result<Value, String> {
    let map = match v {
        None | Some(Value::Null) => return Err(format!("missing field `{at}`")),
        Some(Value::Object(map)) => map,
        Some(other) => return Err(format!("{at}: expected an object, got {other}")),
    };
    if let Some(unknown) = map.keys().find(|k| !BORROWER_KEYS.contains(&k.as_str())) {
        return Err(format!(
            "{at}.{unknown}: unknown field of a borrower; fields: {}",
            BORROWER_KEYS.join(", ")
        ));
    }
    for k in [
        "firstName",
        "lastName",
        "middleName",
        "externalId",
        "borrowerType",
    ] {
        match map.get(k) {
            None | Some(Value::Null) | Some(Value::String(_)) => {}
            Some(other) => return Err(format!("{at}.{k}: expected a string or null, got {other}")),
        }
    }
    match map.get("isPrimary") {
        None | Some(Value::Bool(_)) => {}
        Some(other) => {
            return Err(format!(
                "{at}.isPrimary: expected true or false, got {other}"
            ))
        }
    }
    for k in [
        "previousAddresses",
        "ownedProperties",
        "employments",
        "otherIncomes",
        "liabilities",
        "assets",
    ] {
        match map.get(k) {
            None | Some(Value::Null) | Some(Value::Array(_)) => {}
            Some(other) => return Err(format!("{at}.{k}: expected an array, got {other}")),
        }
    }
    let mut kept = map.clone();
    if let Some(co) = map.get("coBorrower").filter(|v| !v.is_null()) {
        kept.insert(
            "coBorrower".into(),
            borrower(Some(co), &format!("{at}.coBorrower"))?,
        );
    }
    Ok(Value::Object(kept))
}

/// Applications: the last line of a loan wins whole, keyed by the loan's key.
pub(super) async fn write_applications(tx: &mut Tx, rows: Vec<Vec<V>>) -> Result<(), ImportError> {
    let rows = last_per_id(rows);
    let keys = tx.loan_keys(&super::write::first_texts(&rows)).await?;
    // The loan id becomes its key (`with_keys` puts the key in front of the loan id).
    let (rows, _) = with_keys(rows, &keys);
    let rows: Vec<Vec<V>> = rows
        .into_iter()
        .map(|mut r| {
            r.remove(1);
            r
        })
        .collect();
    tx.insert_rows("loan_applications", &COLUMNS, &upsert_tail(&COLUMNS), &rows)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sensitive_keys_are_found_at_any_depth_unless_null() {
        let v = json!({"borrower": {"firstName": "A", "ssn": null,
            "coBorrower": {"assets": [{"amount": 1.0}, {"accountNumber": "123"}]}}});
        assert_eq!(
            sensitive_path(&v, "").as_deref(),
            Some("borrower.coBorrower.assets[1].accountNumber")
        );
        assert_eq!(
            sensitive_path(&json!({"ssn": null, "fico": null}), ""),
            None
        );
        for k in SENSITIVE_KEYS {
            let v = json!({"x": [{k: "planted"}]});
            assert_eq!(sensitive_path(&v, "").unwrap(), format!("x[0].{k}"));
        }
    }
}
