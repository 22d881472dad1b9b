//! `search_loan_applications`: a page of loan applications by borrower name or loan number
//! tokens (the filter's `searchText` rules, matched by the host over the applications' loans),
//! readiness (`InProgress`, `ReadyToSubmit`, `Submitted`) and update dates, latest first,
//! paged by the host's sealed cursor. Within the per-loan scope the host resolves. It cannot
//! filter by loan type (the spec says so): a `loanTypes` argument is refused with the tool that
//! can.

use loanhost_guest::applications::DATASET;
use loanhost_guest::bindings::loan::reporting::data::{Condition, Predicate, Value as Cell};
use loanhost_guest::listing::{self, ListQuery, OrderOption};
use loanhost_guest::models::application_parts::READINESS;
use loanhost_guest::{parse_arguments, Description, Tool, ToolError};
use serde::Deserialize;
use serde_json::{json, Value};

/// Applications a page holds by default, and at most.
const DEFAULT_PAGE_SIZE: u32 = 25;
const MAX_PAGE_SIZE: u32 = 100;

/// The refusal of `loanTypes`.
pub const NO_LOAN_TYPES: &str = "loanTypes: search_loan_applications cannot filter by loan \
    type; use query_loans with filter.loanTypes (or report_loans) to find loans by type";

/// What each row holds.
const FIELDS: [&str; 6] = [
    "id",
    "loanId",
    "loanNumber",
    "status",
    "updated",
    "loanStatus",
];
/// The borrower's names, for callers who may read them.
const BORROWER_FIELDS: [&str; 2] = ["borrowerFirstName", "borrowerLastName"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Args {
    #[serde(default)]
    search_text: Option<String>,
    #[serde(default)]
    statuses: Option<Vec<String>>,
    #[serde(default)]
    updated_from: Option<String>,
    #[serde(default)]
    updated_to: Option<String>,
    #[serde(default)]
    page_size: Option<u32>,
    #[serde(default)]
    cursor: Option<String>,
}

struct SearchLoanApplications;

impl Tool for SearchLoanApplications {
    fn describe() -> Description {
        Description::new(
            "search_loan_applications",
            "Find loan applications",
            "Finds loan applications by borrower name or loan number (searchText: every word \
             must match), by readiness (statuses: InProgress, ReadyToSubmit, Submitted) and by \
             when they last changed (updatedFrom/updatedTo, dates or date-times), latest first, \
             a page at a time (nextCursor). Answers each application's id (for \
             get_loan_application, get_loan_application_tasks and \
             get_loan_application_contacts), its loan and the borrower's name for roles that \
             work the loan. It cannot filter by loan type: use query_loans with \
             filter.loanTypes for that.",
        )
        .input_schema(json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "searchText": {"type": "string", "maxLength": 200,
                    "description": "Borrower name or loan number words; every word must match."},
                "statuses": {"type": "array", "items": {"type": "string", "enum": READINESS},
                    "description": "Readiness: InProgress, ReadyToSubmit, Submitted."},
                "updatedFrom": {"type": "string", "description": "Changed on or after (YYYY-MM-DD or a date-time)."},
                "updatedTo": {"type": "string", "description": "Changed on or before (YYYY-MM-DD: the whole day, or a date-time)."},
                "pageSize": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE, "default": DEFAULT_PAGE_SIZE},
                "cursor": {"type": "string", "maxLength": 256,
                    "description": "nextCursor of the previous page; send the same arguments with it."}
            }
        }))
    }

    fn call(arguments: Value) -> Result<Value, ToolError> {
        if arguments.get("loanTypes").is_some() {
            return Err(ToolError::invalid_params(NO_LOAN_TYPES));
        }
        let args: Args = parse_arguments(arguments)?;
        let page_size = args.page_size.unwrap_or(DEFAULT_PAGE_SIZE);
        if page_size == 0 || page_size > MAX_PAGE_SIZE {
            return Err(ToolError::invalid_params(format!(
                "pageSize: {page_size} is not between 1 and {MAX_PAGE_SIZE}"
            )));
        }
        let mut predicates = Vec::new();
        if let Some(statuses) = args.statuses.filter(|s| !s.is_empty()) {
            if let Some(bad) = statuses.iter().find(|s| !READINESS.contains(&s.as_str())) {
                return Err(ToolError::invalid_params(format!(
                    "statuses: `{bad}` is not one of {}",
                    READINESS.join(", ")
                )));
            }
            predicates.push(Predicate {
                field: "status".into(),
                condition: Condition::AnyOf(statuses.into_iter().map(Cell::Text).collect()),
            });
        }
        if let Some(from) = &args.updated_from {
            let at = instant("updatedFrom", from, false)?;
            predicates.push(updated(Condition::Ge(Cell::Timestamp(at))));
        }
        if let Some(to) = &args.updated_to {
            let at = instant("updatedTo", to, true)?;
            predicates.push(updated(Condition::Le(Cell::Timestamp(at))));
        }
        let filter = args
            .search_text
            .filter(|t| !t.trim().is_empty())
            .map(|t| json!({"searchText": t}).to_string());
        let mut fields: Vec<String> = FIELDS.iter().map(|f| f.to_string()).collect();
        let mut named = fields.clone();
        named.extend(BORROWER_FIELDS.iter().map(|f| f.to_string()));
        let list = |fields: Vec<String>| ListQuery {
            dataset: DATASET.into(),
            filter: filter.clone(),
            predicates: predicates.clone(),
            fields,
            order_by: OrderOption::Updated,
            descending: true,
            page_size,
            cursor: args.cursor.clone(),
        };
        let page = match listing::list_objects(&list(named)) {
            // A caller who may not read borrowers' names: the applications without them.
            Err(ToolError::Forbidden(m)) if m.contains("borrower") => {
                fields.truncate(FIELDS.len());
                listing::list_objects(&list(fields))?
            }
            other => other?,
        };
        let applications: Vec<Value> = page
            .rows
            .into_iter()
            .map(|mut r| {
                let id = r.remove("id").unwrap_or(Value::Null);
                let updated = r.remove("updated").unwrap_or(Value::Null);
                let mut out = serde_json::Map::new();
                out.insert("loanApplicationId".into(), id);
                out.insert("updatedTimestampUtc".into(), updated);
                out.extend(r);
                Value::Object(out)
            })
            .collect();
        Ok(json!({
            "applications": applications,
            "pageSize": page_size,
            "nextCursor": page.next_cursor,
        }))
    }
}

fn updated(condition: Condition) -> Predicate {
    Predicate {
        field: "updated".into(),
        condition,
    }
}

/// A date (`YYYY-MM-DD`: its first instant, or with `end` its last) or a date-time, as the
/// host compares instants (RFC 3339, checked by the host).
fn instant(key: &str, text: &str, end: bool) -> Result<String, ToolError> {
    let t = text.trim();
    let is_date = t.len() == 10
        && t.char_indices().all(|(i, c)| match i {
            4 | 7 => c == '-',
            _ => c.is_ascii_digit(),
        });
    match (is_date, t.contains('T')) {
        (true, _) if end => Ok(format!("{t}T23:59:59.999Z")),
        (true, _) => Ok(format!("{t}T00:00:00Z")),
        (false, true) => Ok(t.to_string()),
        _ => Err(ToolError::invalid_params(format!(
            "{key}: `{text}` is not a date (YYYY-MM-DD) or a date-time"
        ))),
    }
}

loanhost_guest::export_tool!(SearchLoanApplications);
