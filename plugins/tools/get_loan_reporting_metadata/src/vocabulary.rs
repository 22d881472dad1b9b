//! The vocabulary record the tool answers with, built from the platform's vocabulary
//! (`loanhost_guest::vocab`) and the tool's own lists. Compiled twice: into the tool, and into
//! its build script, which writes the record's JSON text once per build (`build.rs`): the
//! answer is the same for every caller and every call, so a call only hands that text out.
//! The parent module names the platform's vocabulary `vocab`.

use loanhost_models::reporting::LoanReportingMetadataResponse;

/// The 45 loan statuses, in the spec's order.
const STATUSES: &[&str] = &super::vocab::LOAN_STATUSES;

const LOAN_TYPES: &[&str] = &super::vocab::LOAN_TYPES;

const PURPOSES: &[&str] = &super::vocab::PURPOSES;

const GROUP_BY_DIMENSIONS: &[&str] = &super::vocab::GROUP_BY_DIMENSIONS;

const METRIC_FUNCTIONS: &[&str] = &super::vocab::METRIC_FUNCTIONS;
const METRIC_FIELDS: &[&str] = &super::vocab::METRIC_FIELDS;
const DATE_FIELDS: &[&str] = &super::vocab::DATE_FIELDS;
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

/// The record: every list, in its order.
pub fn record() -> LoanReportingMetadataResponse {
    let list = |words: &[&str]| words.iter().map(|w| w.to_string()).collect();
    LoanReportingMetadataResponse {
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
    }
}
