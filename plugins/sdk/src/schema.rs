//! JSON Schema pieces shared by the reports.

use serde_json::{json, Value};

use crate::vocab::{LOAN_STATUSES, LOAN_TYPES, PURPOSES};

/// An array of values from a vocabulary: `[]` (like omitting it) is unconstrained.
fn one_of(values: &[&str], description: &str) -> Value {
    json!({"type": "array", "items": {"type": "string", "enum": values}, "description": description})
}

/// The spec's filter object (shared by the snapshot-backed reports).
pub fn loan_filter() -> Value {
    let dt = |d: &str| json!({"type": "string", "format": "date-time", "description": d});
    json!({
        "type": "object",
        "additionalProperties": false,
        "description": "Optional narrowing; every field is optional and can only narrow what the caller's role permits. Do not use statuses or status/closing dates to count loans closed or funded in a period (use report_loan_milestones).",
        "properties": {
            "searchText": {"type": "string", "description": "Case-insensitive match on loan number and borrower first name, last name, email; every whitespace-separated token must match."},
            "statuses": one_of(&LOAN_STATUSES, "Current loan status names, OR'd; an empty list is unconstrained. A status is where a loan sits now: to count loans closed or funded in a period use report_loan_milestones."),
            "loanTypes": one_of(&LOAN_TYPES, "Loan types, OR'd; an empty list is unconstrained."),
            "purposes": one_of(&PURPOSES, "Loan purposes, OR'd; an empty list is unconstrained."),
            "statusDateFrom": dt("Inclusive lower bound on the date the current status was set."),
            "statusDateTo": dt("Inclusive upper bound on the date the current status was set."),
            "closingDateFrom": dt("Inclusive lower bound on the estimated closing date (sparsely populated)."),
            "closingDateTo": dt("Inclusive upper bound on the estimated closing date (sparsely populated)."),
            "updatedFrom": dt("Inclusive lower bound on the last-updated date."),
            "updatedTo": dt("Inclusive upper bound on the last-updated date."),
            "loanOfficerIds": {"type": "array", "items": {"type": "string", "format": "uuid"}, "description": "Loan officer user ids (the keyId of report_loans grouped by LoanOfficer), OR'd; intersected with the caller's scope; an empty list is unconstrained."},
            "referringAgentId": {"type": "string", "format": "uuid", "description": "Loans referred by this user."},
            "processorId": {"type": "string", "format": "uuid", "description": "Loans handled by this processor user."},
            "loanAmountMin": {"type": "number", "description": "USD, inclusive."},
            "loanAmountMax": {"type": "number", "description": "USD, inclusive."},
            "commissionMin": {"type": "number", "description": "Locked compensation in USD, inclusive."},
            "commissionMax": {"type": "number", "description": "Locked compensation in USD, inclusive."},
            "propertyState": {"type": "string", "pattern": "^[A-Za-z]{2}$", "examples": ["CA", "TX"], "description": "Two-letter subject-property state code (any case: `ca` is `CA`); a state's name is refused with its code named."}
        }
    })
}
