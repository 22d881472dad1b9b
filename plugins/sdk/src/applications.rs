//! Loan applications (`loan-applications`, listed through `loan:reporting@1.2.0` `listing`),
//! for a plugin whose manifest declares a listing grant for it: one application read by id
//! within the caller's per-loan scope, and the spec's closed `GetLoanApplicationResponse`
//! written from it, its section-completion report computed by the specification's rules
//! (`loanhost_models::application_parts::report`). The host never holds a borrower's sensitive
//! data (decision 0046), so the fields that carry it are always written `null` (`creditScores`
//! `[]`): a reader cannot tell unknown from withheld by the value.

use serde_json::{json, Map, Value};

use crate::bindings::loan::reporting::data::{Condition, Predicate, Value as Cell};
use crate::listing::{self, ListQuery, OrderOption};
use crate::models::application_parts::{report, task_counts, Section, Task};
use crate::models::{Contact, ContactRole, GetLoanApplicationResponse};
use crate::{caller, ToolError};

/// The dataset's name.
pub const DATASET: &str = "loan-applications";

/// The fields every read asks for.
pub const FIELDS: [&str; 13] = [
    "id",
    "loanId",
    "loanNumber",
    "status",
    "updated",
    "application",
    "sections",
    "tasks",
    "documents",
    "timeline",
    "contactRoles",
    "loanStatus",
    "loanPurpose",
];

/// The fields read only for callers who may read names.
pub const NAME_FIELDS: [&str; 4] = ["updatedByName", "contacts", "referredBy", "loanOfficerName"];

/// The borrower, read only for callers who may read borrowers' names.
pub const BORROWER_FIELD: &str = "borrower";

/// A borrower's fields that hold sensitive data: never stored, always answered `null` (and
/// `creditScores` `[]`, an asset's `accountNumber` `null`).
pub const SENSITIVE_NULL: [&str; 8] = [
    "ssn",
    "encryptedSsn",
    "birthDate",
    "demographics",
    "declaration",
    "hmdaApplicantCreditScore",
    "fico",
    "softCreditExternalId",
];

/// The `loanApplicationId` property of a per-application tool's input schema (the argument
/// every one of them takes, required).
pub fn id_property() -> Value {
    json!({"type": "string", "format": "uuid",
        "description": "The application's id (from search_loan_applications)."})
}

/// An application as the host lists it: each field by name (parts parsed from their JSON).
pub type Row = Map<String, Value>;

/// The application `id` if the caller may read it (`None`, as for an unknown id, otherwise).
/// Names and the borrower are read only for callers the host lets read them.
pub fn read(id: &str) -> Result<Option<Row>, ToolError> {
    let mut fields: Vec<String> = FIELDS.iter().map(|f| f.to_string()).collect();
    if caller::can_read_names() {
        fields.extend(NAME_FIELDS.iter().map(|f| f.to_string()));
    }
    let mut with_borrower = fields.clone();
    with_borrower.push(BORROWER_FIELD.into());
    let page = match listing::list_objects(&by_id(id, with_borrower)) {
        // A caller who may not read borrowers' names: the file without its borrower.
        Err(ToolError::Forbidden(m)) if m.contains("borrower") => {
            listing::list_objects(&by_id(id, fields))?
        }
        other => other?,
    };
    Ok(page.rows.into_iter().next().map(parse_parts))
}

/// The refusal of an application the caller may not read, or that does not exist: the same
/// words for both.
pub const UNKNOWN: &str = "loanApplicationId: no loan application with this id that you may read";

/// The application a tool's `loanApplicationId` names: refused as not a UUID, or as
/// [`UNKNOWN`] when the caller may not read it.
pub fn read_or_refuse(id: &str) -> Result<Row, ToolError> {
    let ok = id.len() == 36
        && id.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        });
    if !ok {
        return Err(ToolError::invalid_params(format!(
            "loanApplicationId: `{id}` is not a UUID"
        )));
    }
    read(&id.to_ascii_lowercase())?.ok_or_else(|| ToolError::invalid_params(UNKNOWN))
}

/// A one-row list of the application `id`.
fn by_id(id: &str, fields: Vec<String>) -> ListQuery {
    ListQuery {
        dataset: DATASET.into(),
        filter: None,
        predicates: vec![Predicate {
            field: "id".into(),
            condition: Condition::Eq(Cell::Text(id.to_string())),
        }],
        fields,
        order_by: OrderOption::Updated,
        descending: true,
        page_size: 1,
        cursor: None,
    }
}

/// A row whose JSON parts are parsed (a part the host gives as text).
pub fn parse_parts(row: Row) -> Row {
    row.into_iter()
        .map(|(k, v)| match v {
            Value::String(s) if s.starts_with(['{', '[']) => {
                (k, serde_json::from_str(&s).unwrap_or(Value::String(s)))
            }
            other => (k, other),
        })
        .collect()
}

/// The sections of a row.
pub fn sections(row: &Row) -> Result<Vec<Section>, ToolError> {
    part(row, "sections")
}

/// The tasks of a row.
pub fn tasks(row: &Row) -> Result<Vec<Task>, ToolError> {
    part(row, "tasks")
}

fn part<T: serde::de::DeserializeOwned + Default>(row: &Row, k: &str) -> Result<T, ToolError> {
    match row.get(k) {
        None | Some(Value::Null) => Ok(T::default()),
        Some(v) => serde_json::from_value(v.clone())
            .map_err(|e| ToolError::internal(format!("the application's {k} do not fit: {e}"))),
    }
}

/// A borrower as answered: the stored one with every sensitive field `null` (and
/// `creditScores` `[]`, an asset's `accountNumber` `null`), its co-borrower likewise.
pub fn answered_borrower(stored: &Value) -> Value {
    let Value::Object(map) = stored else {
        return Value::Null;
    };
    let mut b = map.clone();
    for k in SENSITIVE_NULL {
        b.insert(k.into(), Value::Null);
    }
    b.insert("creditScores".into(), json!([]));
    if let Some(Value::Array(assets)) = b.get_mut("assets") {
        for a in assets.iter_mut() {
            if let Value::Object(a) = a {
                a.insert("accountNumber".into(), Value::Null);
            }
        }
    }
    if let Some(co) = b.get("coBorrower").filter(|v| !v.is_null()).cloned() {
        b.insert("coBorrower".into(), answered_borrower(&co));
    }
    Value::Object(b)
}

/// A contact for a caller who may not read names: its role only.
fn anonymous_contact() -> Contact {
    Contact {
        id: None,
        email: None,
        first_name: None,
        last_name: None,
        agent_name: None,
        role_name: None,
        agent_nmls: None,
        role: ContactRole::Referral,
        phone: None,
        mobile_phone: None,
        company_phone: None,
        zip: None,
        state: None,
        city: None,
        street: None,
        company_nmls: None,
    }
}

/// `GetLoanApplicationResponse` for a row [`read`] gave.
pub fn response(row: &Row) -> Result<GetLoanApplicationResponse, ToolError> {
    let app = row.get("application").cloned().unwrap_or(Value::Null);
    let sections = sections(row)?;
    let tasks = tasks(row)?;
    let submitted = app["isSubmitted"].as_bool().unwrap_or(false);
    let completion = report(&sections, &tasks, submitted);
    let who = row.get("updatedByName").cloned().unwrap_or(json!({}));
    let referred = match row.get("referredBy") {
        Some(v @ Value::Object(_)) => serde_json::from_value(v.clone())
            .map_err(|e| ToolError::internal(format!("the referrer does not fit: {e}")))?,
        _ => anonymous_contact(),
    };
    let borrower = row.get(BORROWER_FIELD).map(answered_borrower);
    let contacts = row
        .get("contacts")
        .or_else(|| row.get("contactRoles"))
        .cloned()
        .unwrap_or(json!([]));
    let loan_info = json!({
        "loanId": row.get("loanId"),
        "loanNumber": row.get("loanNumber"),
        "loanStatus": row.get("loanStatus"),
        "loanPurpose": row.get("loanPurpose"),
        "loanOfficerName": row.get("loanOfficerName"),
        "readiness": row.get("status"),
        "borrower": borrower.clone().unwrap_or(Value::Null),
        "coBorrower": borrower.as_ref().map(|b| b["coBorrower"].clone()).unwrap_or(Value::Null),
        "contacts": contacts,
        "documents": row.get("documents").cloned().unwrap_or(json!([])),
    });
    let model = json!({
        "losType": app["losType"],
        "updatedByEmail": who["updatedByEmail"],
        "updatedByFirstName": who["updatedByFirstName"],
        "updatedByLastName": who["updatedByLastName"],
        "updatedByIp": null,
        "isLoanEditable": app["isLoanEditable"].as_bool().unwrap_or(false),
        "skipStatedIncomePreapproval": app["skipStatedIncomePreapproval"],
        "startStatedIncomePreapproval": app["startStatedIncomePreapproval"],
        "isSetupComplete": app["isSetupComplete"].as_bool().unwrap_or(false),
        "timestamp": app["timestamp"],
        "referredBy": referred,
        "sectionCompletion": completion,
        "id": row.get("id"),
        "loanInfo": loan_info,
        "tasks": tasks,
        "taskSummaries": task_counts(&tasks),
        "loanTimeline": {"events": row.get("timeline").cloned().unwrap_or(json!([]))},
        "isDeleted": app["isDeleted"].as_bool().unwrap_or(false),
        "createdTimestampUtc": app["createdTimestampUtc"],
        "updatedTimestampUtc": app["updatedTimestampUtc"],
        "updatedBy": app["updatedBy"],
    });
    serde_json::from_value(model)
        .map_err(|e| ToolError::internal(format!("the application does not fit the model: {e}")))
}
