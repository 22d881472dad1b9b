//! `get_loan_application_contacts`: the people and companies on a loan application (`Contact`
//! with its `ContactRole`) and who referred it. Names, emails and phones only for callers who
//! may read names (Admin, Processor, ConciergeKey: the host gives the named contacts only to
//! them); everyone else in scope gets each contact's role. Through the listing capability,
//! within the per-loan scope; an application out of scope answers as an unknown one.

use loanhost_guest::applications;
use loanhost_guest::models::Contact;
use loanhost_guest::{caller, parse_arguments, Description, Tool, ToolError};
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Args {
    loan_application_id: String,
}

struct GetLoanApplicationContacts;

impl Tool for GetLoanApplicationContacts {
    fn describe() -> Description {
        Description::new(
            "get_loan_application_contacts",
            "Who is on a loan application",
            "Lists a loan application's contacts (loan officer, processor, title, escrow, \
             appraiser and others, each a Contact with its role) and the referring contact. \
             Names, emails and phones only for Admin, Processor and ConciergeKey; other roles \
             see each contact's role. namesShown says which.",
        )
        .input_schema(json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["loanApplicationId"],
            "properties": {
                "loanApplicationId": applications::id_property()
            }
        }))
    }

    fn call(arguments: Value) -> Result<Value, ToolError> {
        let args: Args = parse_arguments(arguments)?;
        let row = applications::read_or_refuse(&args.loan_application_id)?;
        let named = caller::can_read_names() && row.contains_key("contacts");
        let stored = match named {
            true => row.get("contacts"),
            false => row.get("contactRoles"),
        };
        let contacts: Vec<Contact> =
            serde_json::from_value(stored.cloned().unwrap_or(json!([])))
                .map_err(|e| ToolError::internal(format!("the contacts do not fit: {e}")))?;
        let referred = match (named, row.get("referredBy")) {
            (true, Some(v @ Value::Object(_))) => v.clone(),
            _ => Value::Null,
        };
        Ok(json!({
            "loanApplicationId": row.get("id"),
            "namesShown": named,
            "contacts": contacts,
            "referredBy": referred,
        }))
    }
}

loanhost_guest::export_tool!(GetLoanApplicationContacts);
