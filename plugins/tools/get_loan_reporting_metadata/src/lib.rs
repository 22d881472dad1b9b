//! `get_loan_reporting_metadata`: the static vocabulary of the loan reporting tools. Reads
//! nothing and returns no loan or user data.

use loanhost_guest::models::reporting::LoanReportingMetadataResponse;
use loanhost_guest::{parse_arguments, Description, NoArguments, Tool, ToolError};
use serde_json::{json, Value};

/// The 45 loan statuses, in the spec's order.
const STATUSES: &[&str] = &loanhost_guest::vocab::LOAN_STATUSES;

const LOAN_TYPES: &[&str] = &loanhost_guest::vocab::LOAN_TYPES;

const PURPOSES: &[&str] = &loanhost_guest::vocab::PURPOSES;

const GROUP_BY_DIMENSIONS: &[&str] = &[
    "None",
    "Status",
    "LoanType",
    "Purpose",
    "LoanOfficer",
    "ReferringAgent",
    "Month",
    "Quarter",
    "Year",
];

const METRIC_FUNCTIONS: &[&str] = &["Count", "Sum", "Average", "Min", "Max"];
const METRIC_FIELDS: &[&str] = &["LoanAmount", "LockedCompensation", "EstimatedCompensation"];
const DATE_FIELDS: &[&str] = &["StatusDate", "ClosingDate", "Updated"];
const ORDER_BY_OPTIONS: &[&str] = &[
    "updated",
    "statusDate",
    "amount",
    "closingDate",
    "commission",
];
const NORTHSTAR_STAGES: &[&str] = &[
    "1. Opened",
    "2. Pre-Approved",
    "3. Rate Locked",
    "4. Approved",
    "5. Closed & Funded",
];
const MILESTONE_GRANULARITIES: &[&str] = &["Week", "Month"];

struct Metadata;

impl Tool for Metadata {
    fn describe() -> Description {
        Description::new(
            "get_loan_reporting_metadata",
            "Loan reporting vocabulary",
            "Returns the valid values for the loan reporting tools: loan statuses, loan types, \
             purposes, groupBy dimensions, metric functions and fields, date fields, order-by \
             options, the five funnel (Northstar) stages and milestone granularities. Call it \
             first to pick exact filter and grouping values for report_loans, \
             loan_pipeline_report and report_loan_milestones. Takes no parameters and returns no \
             loan or user data. It does not describe the Data Warehouse tools.",
        )
        .input_schema(json!({
            "type": "object",
            "properties": {},
            "additionalProperties": false
        }))
        .output_record::<LoanReportingMetadataResponse>()
    }

    fn call(arguments: Value) -> Result<Value, ToolError> {
        loanhost_guest::result(&answer(arguments)?)
    }

    /// The record written straight to text: no `Value` tree between them.
    fn call_text(arguments: Value) -> Result<String, ToolError> {
        loanhost_guest::result_text(&answer(arguments)?)
    }
}

fn answer(arguments: Value) -> Result<LoanReportingMetadataResponse, ToolError> {
    let NoArguments {} = parse_arguments(arguments)?;
    let list = |words: &[&str]| words.iter().map(|w| w.to_string()).collect();
    Ok(LoanReportingMetadataResponse {
        statuses: list(STATUSES),
        loan_types: list(LOAN_TYPES),
        purposes: list(PURPOSES),
        group_by_dimensions: list(GROUP_BY_DIMENSIONS),
        metric_functions: list(METRIC_FUNCTIONS),
        metric_fields: list(METRIC_FIELDS),
        date_fields: list(DATE_FIELDS),
        order_by_options: list(ORDER_BY_OPTIONS),
        northstar_stages: list(NORTHSTAR_STAGES),
        milestone_granularities: list(MILESTONE_GRANULARITIES),
    })
}

loanhost_guest::export_tool!(Metadata);
