//! `get_loan_application_tasks`: a loan application's tasks (`LoanApplicationTaskItem`, decided
//! in decision 0046) and their summary per kind, all or only those still waiting on someone,
//! with the required borrower documents that block submission named. Through the listing
//! capability, within the per-loan scope; an application out of scope answers as an unknown one.

use loanhost_guest::applications;
use loanhost_guest::models::application_parts::{blocking_documents, task_counts};
use loanhost_guest::{parse_arguments, Description, Tool, ToolError};
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Args {
    loan_application_id: String,
    #[serde(default)]
    outstanding_only: bool,
}

struct GetLoanApplicationTasks;

impl Tool for GetLoanApplicationTasks {
    fn describe() -> Description {
        Description::new(
            "get_loan_application_tasks",
            "A loan application's tasks",
            "Lists a loan application's tasks (borrower documents, verifications, disclosures, \
             conditions): code, title, kind, status, whether required, due date and attached \
             documents, with a count per kind (total, outstanding, completed). Outstanding \
             means Outstanding, Requested or Rejected. outstandingOnly=true keeps only those. \
             blockingDocuments names the required borrower documents that keep the file from \
             being submitted (not Uploaded, Submitted or Accepted). For the whole readiness \
             report use get_loan_application.",
        )
        .input_schema(json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["loanApplicationId"],
            "properties": {
                "loanApplicationId": applications::id_property(),
                "outstandingOnly": {"type": "boolean", "default": false,
                    "description": "Only the tasks still waiting on someone."}
            }
        }))
    }

    fn call(arguments: Value) -> Result<Value, ToolError> {
        let args: Args = parse_arguments(arguments)?;
        let row = applications::read_or_refuse(&args.loan_application_id)?;
        let tasks = applications::tasks(&row)?;
        let listed: Vec<_> = tasks
            .iter()
            .filter(|t| !args.outstanding_only || t.status.is_outstanding())
            .collect();
        Ok(json!({
            "loanApplicationId": row.get("id"),
            "tasks": listed,
            "taskSummaries": task_counts(&tasks),
            "blockingDocuments": blocking_documents(&tasks),
        }))
    }
}

loanhost_guest::export_tool!(GetLoanApplicationTasks);
