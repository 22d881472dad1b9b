//! Loan-application related records (all closed), and the four records whose fields the spec
//! does not show (open objects).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::application::Application;
use crate::contacts::Contact;
use crate::{Date, DateTime};

closed_model! {
    /// `CreditReportType` (closed).
    pub struct CreditReportType {
        pub id: Option<Uuid>,
        pub code: Option<String>,
        pub name: Option<String>,
    }
}

closed_model! {
    /// `CustomField` (closed).
    pub struct CustomField {
        pub id: Option<String>,
        pub code: Option<String>,
        pub external_id: Option<String>,
        pub name: Option<String>,
        pub value: Option<String>,
    }
}

closed_model! {
    /// `DownPaymentSource` (closed).
    pub struct DownPaymentSource {
        pub amount: f64,
        pub source: Option<String>,
        pub explanation: Option<String>,
    }
}

closed_model! {
    /// `Document` (closed): a document attached to a loan application.
    pub struct Document {
        pub id: Uuid,
        pub name: Option<String>,
        pub external_id: Option<String>,
        pub is_pdf_conversion_complete: bool,
        pub loan_application_id: Option<Uuid>,
        pub loan_application_task_id: Option<Uuid>,
        pub blob_name: Option<String>,
        pub created_timestamp: DateTime,
        pub updated_timestamp: DateTime,
        pub updated_by: Option<Uuid>,
        pub document_type_id: Option<Uuid>,
        pub is_vault: bool,
        pub loan_document_type_id: Option<Uuid>,
        pub loan_document_type_name: Option<String>,
        pub loan_document_type_external_id: Option<String>,
        pub loan_document_type_folder_name: Option<String>,
        pub description: Option<String>,
        pub is_deleted: bool,
        pub is_internal: bool,
        pub is_obsolete: bool,
        pub title: Option<String>,
    }
}

closed_model! {
    /// `DisclosureTracker` (closed): the disclosures issued for a loan.
    pub struct DisclosureTracker {
        pub loan_estimates: Vec<LoanEstimateDates>,
        pub closing_disclosures: Vec<ClosingDisclosureDates>,
    }
}

closed_model! {
    /// `LoanEstimateDates` (closed): the dates of one Loan Estimate.
    pub struct LoanEstimateDates {
        pub id: Option<String>,
        pub created_date: Option<Date>,
        pub issued_date: Option<Date>,
        pub received_date: Option<Date>,
        pub signed_date: Option<Date>,
        pub delivery_method: Option<String>,
        pub disclosed_apr: Option<f64>,
        pub consumer_dates: Vec<ConsumerDisclosureDates>,
    }
}

closed_model! {
    /// `ClosingDisclosureDates` (closed): the dates of one Closing Disclosure.
    pub struct ClosingDisclosureDates {
        pub id: Option<String>,
        pub created_date: Option<Date>,
        pub issued_date: Option<Date>,
        pub received_date: Option<Date>,
        pub signed_date: Option<Date>,
        pub delivery_method: Option<String>,
        pub disclosed_apr: Option<f64>,
        pub consumer_dates: Vec<ConsumerDisclosureDates>,
        #[serde(rename = "eCloseStatus")]
        pub e_close_status: Option<String>,
    }
}

closed_model! {
    /// `ConsumerDisclosureDates` (closed): one consumer's dates for a disclosure.
    pub struct ConsumerDisclosureDates {
        pub consumer_id: Option<String>,
        pub consumer_name: Option<String>,
        pub delivery_method: Option<String>,
        pub issued_date: Option<Date>,
        pub received_date: Option<Date>,
        pub signed_date: Option<Date>,
    }
}

closed_model! {
    /// `GetLoanApplicationResponse` (closed): one loan application.
    pub struct GetLoanApplicationResponse {
        pub los_type: Application,
        pub updated_by_email: Option<String>,
        pub updated_by_first_name: Option<String>,
        pub updated_by_last_name: Option<String>,
        pub updated_by_ip: Option<String>,
        pub is_loan_editable: bool,
        pub skip_stated_income_preapproval: Option<bool>,
        pub start_stated_income_preapproval: Option<bool>,
        pub is_setup_complete: bool,
        pub timestamp: Option<i64>,
        pub referred_by: Contact,
        pub section_completion: LoanAppSectionCompletionReport,
        pub id: Uuid,
        pub loan_info: LoanInfo,
        pub tasks: Vec<LoanApplicationTaskItem>,
        pub task_summaries: Vec<TaskSummary>,
        pub loan_timeline: LoanTimeline,
        pub is_deleted: bool,
        pub created_timestamp_utc: DateTime,
        pub updated_timestamp_utc: Option<DateTime>,
        pub updated_by: Option<Uuid>,
    }
}

closed_model! {
    /// `LoanAppSectionCompletionReport` (closed): how far the borrower's wizard is.
    pub struct LoanAppSectionCompletionReport {
        /// Per-section report for the 7 borrower wizard sections in sidebar order; each entry
        /// holds the section status and the required fields still without a value.
        pub sections: Option<Vec<LoanAppSectionCompletion>>,
        /// True when every section status is `Completed` or `Accepted`.
        pub all_sections_complete: bool,
        /// True when the application can be submitted to the LOS now: not already submitted,
        /// all sections `Completed`/`Accepted`, all required borrower document tasks
        /// `Uploaded`/`Submitted`/`Accepted`.
        pub is_ready_to_submit: bool,
        /// Human-readable reasons submission is blocked; empty when `isReadyToSubmit` is true.
        pub submit_blockers: Option<Vec<String>>,
    }
}

/// `LoanAppSectionCompletion`: one wizard section's completion. The spec shows two fields and
/// says the record has more that it does not show; those are accepted and kept as received
/// (refusing them would refuse real documents), so this record is open where the others of
/// its family are closed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoanAppSectionCompletion {
    /// One of `About You`, `Loan & Property`, `Work & Income`, `Assets`, `Liabilities`,
    /// `Real Estate`, `Additional Details`.
    pub section_name: Option<String>,
    /// Code of the verification task that tracks the section.
    pub task_code: Option<String>,
    /// The section's status (`NotStarted`, `InProgress`, `Completed`, `Accepted`, …): one of
    /// the fields the spec does not show, as loanhost answers it (decision 0046).
    #[serde(default)]
    pub status: Option<String>,
    /// The required fields still without a value (decision 0046).
    #[serde(default)]
    pub missing_fields: Option<Vec<String>>,
    /// The other fields the spec does not show, kept as received.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// The wizard's section names, in sidebar order.
pub const SECTION_NAMES: [&str; 7] = [
    "About You",
    "Loan & Property",
    "Work & Income",
    "Assets",
    "Liabilities",
    "Real Estate",
    "Additional Details",
];

open_model! {
    /// `LoanInfo`: the spec does not show its fields; any JSON object, kept as received.
    LoanInfo
}

open_model! {
    /// `LoanApplicationTaskItem`: the spec does not show its fields; any JSON object, kept as
    /// received.
    LoanApplicationTaskItem
}

open_model! {
    /// `TaskSummary`: the spec does not show its fields; any JSON object, kept as received.
    TaskSummary
}

open_model! {
    /// `LoanTimeline`: the spec does not show its fields; any JSON object, kept as received.
    LoanTimeline
}
