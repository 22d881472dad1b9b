//! `query_loans`: the loans behind a report's bucket. One page of the caller's loans matching
//! the spec's `filter` (translated by the host, every rule of it, as for `report_loans`), in one
//! of the spec's `orderByOptions`, through the `listing` capability (loan:reporting@1.2.0); the
//! count of every loan matching through `data`, so a list reconciles with `report_loans`'
//! `totalCount` for the same filter (docs/design.md §7.7). The host decides which fields and
//! rows it may read: the caller's scope, names only for callers who may read them, borrowers'
//! names only when asked and allowed, borrowers' emails never.

use loanhost_guest::data::{self, Aggregate, Query, Value as Cell};
use loanhost_guest::listing::{self, ListQuery, OrderOption};
use loanhost_guest::{caller, parse_arguments, Description, Tool, ToolError};
use serde::Deserialize;
use serde_json::{json, Map, Value};

/// Rows of a page unless the caller asks for another size.
const DEFAULT_PAGE_SIZE: u32 = 25;
/// Rows of a page at most (the host's own cap).
const MAX_PAGE_SIZE: u32 = 100;

/// The fields of every listed loan.
const FIELDS: &[&str] = &[
    "id",
    "loanNumber",
    "status",
    "statusDate",
    "loanType",
    "purpose",
    "loanAmount",
    "lockedCompensation",
    "estimatedCompensation",
    "estimatedClosingDate",
    "updated",
    "propertyState",
    "loanOfficerId",
    "loanAssistantId",
    "processorId",
    "referringAgentId",
];
/// The people's names, for callers who may read names (Admin, Processor, ConciergeKey).
const NAME_FIELDS: &[&str] = &["loanOfficerName", "processorName", "referringAgentName"];
/// The borrower's names, when asked (and only for callers the host lets read them).
const BORROWER_FIELDS: &[&str] = &["borrowerFirstName", "borrowerLastName"];

/// The spec's `orderByOptions`.
const ORDERS: [(&str, OrderOption); 5] = [
    ("updated", OrderOption::Updated),
    ("statusDate", OrderOption::StatusDate),
    ("amount", OrderOption::Amount),
    ("closingDate", OrderOption::ClosingDate),
    ("commission", OrderOption::Commission),
];

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Args {
    #[serde(default)]
    filter: Option<Value>,
    #[serde(default)]
    order_by: Option<String>,
    #[serde(default)]
    descending: Option<bool>,
    #[serde(default)]
    page_size: Option<u32>,
    #[serde(default)]
    cursor: Option<String>,
    #[serde(default)]
    include_borrower_name: Option<bool>,
}

struct QueryLoans;

impl Tool for QueryLoans {
    fn describe() -> Description {
        Description::new(
            "query_loans",
            "Loans behind a bucket",
            "Lists the individual loans in the caller's scope that match a filter, one page at a \
             time: the loans behind a report's bucket ('which 12 loans are in Underwriting?', \
             'show me Olivia's pipeline' with filter.loanOfficerIds from search_users). Each loan \
             has its id, loan number, status and dates, type, purpose, amounts, property state and \
             the ids of its officer, assistant, processor and referring agent. Use it to see WHICH \
             loans; never to count or total them: use report_loans for counts, sums and averages \
             (its totalCount equals this tool's totalCount for the same filter). Ordered by one of \
             updated, statusDate, amount, closingDate, commission (loans without that value \
             last). To read further, pass nextCursor back as cursor with the same filter and \
             order. Officer, processor and referrer names appear only for Admin, Processor and \
             ConciergeKey; borrower names only with includeBorrowerName=true and only for roles \
             allowed to read them; borrower emails are never returned.",
        )
        .input_schema(input_schema())
        .output_schema(output_schema())
    }

    fn call(arguments: Value) -> Result<Value, ToolError> {
        answer(arguments)
    }
}

/// The tool's answer.
fn answer(arguments: Value) -> Result<Value, ToolError> {
    let args: Args = parse_arguments(arguments)?;
    let filter = match args.filter {
        None | Some(Value::Null) => None,
        Some(f @ Value::Object(_)) => Some(f.to_string()),
        Some(_) => return Err(ToolError::invalid_params("filter must be an object")),
    };
    let order_name = args.order_by.as_deref().unwrap_or("updated");
    let Some((_, order_by)) = ORDERS.iter().find(|(n, _)| *n == order_name) else {
        return Err(ToolError::invalid_params(format!(
            "orderBy: `{order_name}` is not one of {}",
            ORDERS.map(|(n, _)| n).join(", ")
        )));
    };
    let page_size = args.page_size.unwrap_or(DEFAULT_PAGE_SIZE);
    if page_size == 0 || page_size > MAX_PAGE_SIZE {
        return Err(ToolError::invalid_params(format!(
            "pageSize: {page_size} is not between 1 and {MAX_PAGE_SIZE}"
        )));
    }
    let descending = args.descending.unwrap_or(true);
    let mut fields: Vec<String> = FIELDS.iter().map(|f| f.to_string()).collect();
    if caller::can_read_names() {
        fields.extend(NAME_FIELDS.iter().map(|f| f.to_string()));
    }
    if args.include_borrower_name.unwrap_or(false) {
        fields.extend(BORROWER_FIELDS.iter().map(|f| f.to_string()));
    }
    let page = listing::list_objects(&ListQuery {
        dataset: "loans".into(),
        filter: filter.clone(),
        predicates: vec![],
        fields,
        order_by: *order_by,
        descending,
        page_size,
        cursor: args.cursor,
    })?;
    let total = data::run(&Query {
        dataset: "loans".into(),
        filter,
        predicates: vec![],
        group_by: vec![],
        distinct_on: None,
        aggregates: vec![Aggregate::Count],
        order_by: vec![],
        limit: None,
    })?;
    let total_count = match total.rows.first().and_then(|r| r.first()) {
        Some(Cell::Integer(n)) => (*n).max(0),
        _ => 0,
    };
    Ok(json!({
        "loans": page.rows.into_iter().map(Value::Object).collect::<Vec<_>>(),
        "totalCount": total_count,
        "orderBy": order_name,
        "descending": descending,
        "pageSize": page_size,
        "nextCursor": page.next_cursor,
    }))
}

fn input_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "filter": loanhost_guest::schema::loan_filter(),
            "orderBy": {"type": "string", "enum": ORDERS.map(|(n, _)| n), "default": "updated",
                        "description": "The order (the spec's orderByOptions): updated, statusDate, amount (loan amount), closingDate (estimated closing date), commission (locked compensation). Loans without that value come last."},
            "descending": {"type": "boolean", "default": true, "description": "Highest (latest) first."},
            "pageSize": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE, "default": DEFAULT_PAGE_SIZE,
                         "description": "Loans in this page."},
            "cursor": {"type": "string", "maxLength": 256,
                       "description": "nextCursor of the previous page; send the same filter and order with it."},
            "includeBorrowerName": {"type": "boolean", "default": false,
                                    "description": "Add the borrower's first and last name (refused for roles that may not read them)."}
        }
    })
}

fn output_schema() -> Value {
    let text = json!({"type": ["string", "null"]});
    let mut loan = Map::new();
    for f in FIELDS.iter().chain(NAME_FIELDS).chain(BORROWER_FIELDS) {
        loan.insert(f.to_string(), text.clone());
    }
    json!({
        "type": "object",
        "required": ["loans", "totalCount", "orderBy", "descending", "pageSize", "nextCursor"],
        "properties": {
            "loans": {"type": "array", "items": {
                "type": "object",
                "description": "A loan: amounts as exact decimal strings, dates as RFC 3339 instants; names only where the caller may read them.",
                "required": FIELDS,
                "properties": loan,
                "additionalProperties": false
            }},
            "totalCount": {"type": "integer", "minimum": 0, "description": "Every loan in the caller's scope matching the filter (report_loans' totalCount for the same filter)."},
            "orderBy": {"type": "string"},
            "descending": {"type": "boolean"},
            "pageSize": {"type": "integer"},
            "nextCursor": {"type": ["string", "null"], "description": "Pass back as cursor for the next page; null on the last page."}
        }
    })
}

loanhost_guest::export_tool!(QueryLoans);
