//! JSON Schema pieces shared by the reports.

use serde_json::{json, Value};

/// The spec's filter object (shared by the snapshot-backed reports).
pub fn loan_filter() -> Value {
    let dt = |d: &str| json!({"type": "string", "format": "date-time", "description": d});
    json!({
        "type": "object",
        "additionalProperties": false,
        "description": "Optional narrowing; every field is optional and can only narrow what the caller's role permits. Do not use statuses or status/closing dates to count loans closed or funded in a period (use report_loan_milestones).",
        "properties": {
            "searchText": {"type": "string", "description": "Case-insensitive match on loan number and borrower first name, last name, email; every whitespace-separated token must match."},
            "statuses": {"type": "array", "items": {"type": "string"}, "description": "Exact current loan status names, OR'd (see get_loan_reporting_metadata)."},
            "loanTypes": {"type": "array", "items": {"type": "string"}, "description": "Exact names, e.g. Conventional, FHA, VA, USDA/Rural Housing."},
            "purposes": {"type": "array", "items": {"type": "string"}, "description": "Exact names, e.g. Purchase, Refinance, Refinance Cashout."},
            "statusDateFrom": dt("Inclusive lower bound on the date the current status was set."),
            "statusDateTo": dt("Inclusive upper bound on the date the current status was set."),
            "closingDateFrom": dt("Inclusive lower bound on the estimated closing date (sparsely populated)."),
            "closingDateTo": dt("Inclusive upper bound on the estimated closing date (sparsely populated)."),
            "updatedFrom": dt("Inclusive lower bound on the last-updated date."),
            "updatedTo": dt("Inclusive upper bound on the last-updated date."),
            "loanOfficerIds": {"type": "array", "items": {"type": "string", "format": "uuid"}, "description": "Loan officer user ids (from search_users); intersected with the caller's scope."},
            "referringAgentId": {"type": "string", "format": "uuid", "description": "Loans referred by this user."},
            "processorId": {"type": "string", "format": "uuid", "description": "Loans handled by this processor user."},
            "loanAmountMin": {"type": "number", "description": "USD, inclusive."},
            "loanAmountMax": {"type": "number", "description": "USD, inclusive."},
            "commissionMin": {"type": "number", "description": "Locked compensation in USD, inclusive."},
            "commissionMax": {"type": "number", "description": "Locked compensation in USD, inclusive."},
            "propertyState": {"type": "string", "description": "Two-letter subject-property state code."}
        }
    })
}
