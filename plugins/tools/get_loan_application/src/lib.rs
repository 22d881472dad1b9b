//! `get_loan_application`: one loan application as the spec's closed `GetLoanApplicationResponse`,
//! through the listing capability (dataset `loan-applications`), with its section-completion
//! report computed by the specification's rules: `allSectionsComplete`, `isReadyToSubmit` and
//! `submitBlockers` (decision 0046). Within the per-loan scope the host resolves (Admin and
//! Processor every application, a CompanyAdmin its company's, everyone else those of their
//! reporting scope); an application out of scope answers exactly as an unknown one. A
//! borrower's sensitive fields are always `null`: the host never holds them.

use loanhost_guest::applications;
use loanhost_guest::models::GetLoanApplicationResponse;
use loanhost_guest::{parse_arguments, Description, Tool, ToolError};
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Args {
    loan_application_id: String,
}

struct GetLoanApplication;

impl Tool for GetLoanApplication {
    fn describe() -> Description {
        Description::new(
            "get_loan_application",
            "One loan application and whether it is ready to submit",
            "Reads one loan application (GetLoanApplicationResponse): its seven wizard sections \
             and their statuses, tasks with a summary per kind, the loan it belongs to, the \
             borrower (names only for roles that work the loan), contacts (names only for \
             Admin, Processor and ConciergeKey) and the timeline. sectionCompletion answers \
             'is this file ready to submit, and what blocks it': isReadyToSubmit is true when \
             the file is not yet submitted, every section is Completed or Accepted and every \
             required borrower document is Uploaded, Submitted or Accepted; submitBlockers \
             lists the reasons otherwise. Find ids with search_loan_applications. A borrower's \
             SSN, birth date, demographics, declarations, credit scores and account numbers \
             are never returned (always null).",
        )
        .input_schema(json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["loanApplicationId"],
            "properties": {
                "loanApplicationId": applications::id_property()
            }
        }))
        .output_record::<GetLoanApplicationResponse>()
    }

    fn call(arguments: Value) -> Result<Value, ToolError> {
        let args: Args = parse_arguments(arguments)?;
        let row = applications::read_or_refuse(&args.loan_application_id)?;
        loanhost_guest::result(&applications::response(&row)?)
    }
}

loanhost_guest::export_tool!(GetLoanApplication);
