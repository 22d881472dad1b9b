//! `get_loan_reporting_metadata`: the static vocabulary of the loan reporting tools. Reads
//! nothing and returns no loan or user data. Its answer is written once, when it is built
//! (`build.rs`, from [`vocabulary::record`]); a call checks its arguments and hands the text out.

use loanhost_guest::models::reporting::LoanReportingMetadataResponse;
use loanhost_guest::vocab;
use loanhost_guest::{parse_arguments, Description, NoArguments, Tool, ToolError};
use serde_json::{json, Value};

mod vocabulary;

/// The record's JSON text, as the build script wrote it.
const ANSWER: &str = include_str!(concat!(env!("OUT_DIR"), "/answer.json"));

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
        let NoArguments {} = parse_arguments(arguments)?;
        loanhost_guest::result(&vocabulary::record())
    }

    /// The text written at build time: the same for every call, so no call writes it again
    /// (writing it took most of the tool's run time, in every call).
    fn call_text(arguments: Value) -> Result<String, ToolError> {
        let NoArguments {} = parse_arguments(arguments)?;
        Ok(ANSWER.to_owned())
    }
}

loanhost_guest::export_tool!(Metadata);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_built_in_is_the_record_written_now() {
        // Arrange
        let record = vocabulary::record();

        // Act
        let written = serde_json::to_string(&record).unwrap();

        // Assert
        assert_eq!(ANSWER, written);
        assert_eq!(record.statuses.len(), 45);
    }

    #[test]
    fn a_call_answers_the_text_and_refuses_arguments() {
        // Arrange
        let none = json!({});
        let some = json!({"status": "Loan Open"});

        // Act
        let answered = Metadata::call_text(none.clone()).unwrap();
        let refused = Metadata::call_text(some);

        // Assert
        assert_eq!(answered, ANSWER);
        assert_eq!(
            Metadata::call(none).unwrap(),
            serde_json::from_str::<Value>(ANSWER).unwrap()
        );
        assert!(
            matches!(refused, Err(ToolError::InvalidParams(_))),
            "{refused:?}"
        );
    }
}
