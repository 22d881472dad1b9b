//! `get_user_licenses`: a user's state licences as the spec's `GetUserLicensesResponse`, through
//! the licensing capability (loan:reporting@1.2.0). The caller's own by default; another user's
//! only where the host's per-user access check allows it (Admin: any agent; ConciergeKey: the
//! agents they manage; no Processor branch). A user the caller may not read answers exactly as a
//! user who does not exist (docs/design.md §7.9).

use loanhost_guest::licensing;
use loanhost_guest::models::licensing::GetUserLicensesResponse;
use loanhost_guest::{parse_arguments, Description, Tool, ToolError};
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Args {
    #[serde(default)]
    user_id: Option<String>,
}

struct GetUserLicenses;

impl Tool for GetUserLicenses {
    fn describe() -> Description {
        Description::new(
            "get_user_licenses",
            "State licences of a user",
            "Lists a loan officer's state licences (state code, licence number, expiration year): \
             the caller's own when userId is left out. Use it before search_pricing, which prices \
             only properties in states where the caller holds a licence that has not expired \
             (expirationYear this year or later). Another user's licences only for Admin, and for \
             a ConciergeKey the agents they manage (user ids come from search_users); any other \
             user answers as an unknown one. Not for counting licences across people.",
        )
        .input_schema(json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "userId": {"type": "string", "format": "uuid",
                           "description": "Whose licences; leave out for your own."}
            }
        }))
        .output_record::<GetUserLicensesResponse>()
    }

    fn call(arguments: Value) -> Result<Value, ToolError> {
        let args: Args = parse_arguments(arguments)?;
        let Some(found) = licensing::user_licenses(args.user_id.as_deref())? else {
            return Err(ToolError::invalid_params(
                "userId: no user with this id whose licences you may read (your own, and for \
                 Admin any agent's, for a ConciergeKey the agents they manage)",
            ));
        };
        let licenses: Vec<Value> = found
            .licenses
            .into_iter()
            .map(|l| {
                json!({
                    "state": l.state,
                    "stateLicenseNumber": l.state_license_number,
                    "expirationYear": l.expiration_year,
                })
            })
            .collect();
        // Through the shared model: the answer is `GetUserLicensesResponse`, field for field.
        let model: GetUserLicensesResponse = serde_json::from_value(json!({
            "userId": found.user_id,
            "count": licenses.len(),
            "licenses": licenses,
        }))
        .map_err(|e| ToolError::internal(format!("the licences do not fit the model: {e}")))?;
        loanhost_guest::result(&model)
    }
}

loanhost_guest::export_tool!(GetUserLicenses);
