//! `search_pricing`: indicative rates for a loan scenario from the rate sheet the platform
//! imports, through the pricing capability (loan:reporting@1.2.0). The host refuses a scenario
//! unless the caller holds a licence in the property's state that has not expired; the scenario
//! names no borrower and no loan (docs/design.md §7.10).

use loanhost_guest::pricing::{self, Scenario};
use loanhost_guest::{parse_arguments, Description, Tool, ToolError};
use serde::Deserialize;
use serde_json::{json, Value};

/// What every answer says of its prices.
const INDICATIVE: &str = "Indicative prices from the platform's rate sheet for the scenario as \
                          given: not a quote, a commitment to lend or a rate lock; final pricing \
                          depends on the full application and the lock.";

/// Arguments that identify a borrower or a loan: refused by name (pricing takes none).
const IDENTIFIERS: [&str; 8] = [
    "borrowerName",
    "borrowerFirstName",
    "borrowerLastName",
    "borrowerEmail",
    "ssn",
    "loanId",
    "loanNumber",
    "loanApplicationId",
];

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Args {
    property_state: String,
    loan_amount: Value,
    #[serde(default)]
    property_value: Option<Value>,
    #[serde(default)]
    ltv: Option<Value>,
    credit_score: u32,
    loan_type: String,
    #[serde(default)]
    purpose: Option<String>,
    #[serde(default)]
    occupancy: Option<String>,
    #[serde(default)]
    term_months: Option<u32>,
    #[serde(default)]
    lock_days: Option<u32>,
}

struct SearchPricing;

impl Tool for SearchPricing {
    fn describe() -> Description {
        Description::new(
            "search_pricing",
            "Indicative rates for a scenario",
            "Gives indicative rates and points for a loan scenario (property state, loan amount, \
             property value or LTV, credit score, loan type, purpose, occupancy, term, lock days) \
             from the platform's rate sheet, lowest rate first. Only for properties in a state \
             where the caller holds a licence that has not expired (see get_user_licenses). The \
             prices are indicative, not a quote or a lock. It takes no borrower or loan \
             identifier: describe the scenario instead. Not for reporting on loans.",
        )
        .input_schema(input_schema())
        .output_schema(output_schema())
    }

    fn call(arguments: Value) -> Result<Value, ToolError> {
        answer(arguments)
    }
}

/// A decimal argument as exact text (a JSON number or a string of one).
fn decimal(name: &str, v: &Value) -> Result<String, ToolError> {
    match v {
        Value::Number(n) => Ok(n.to_string()),
        Value::String(s) => Ok(s.trim().to_string()),
        _ => Err(ToolError::invalid_params(format!(
            "{name}: expected a decimal number"
        ))),
    }
}

fn answer(arguments: Value) -> Result<Value, ToolError> {
    if let Some(k) = IDENTIFIERS.iter().find(|k| arguments.get(**k).is_some()) {
        return Err(ToolError::invalid_params(format!(
            "{k}: search_pricing takes no borrower or loan identifier; describe the scenario \
             (state, amount, value or LTV, credit score, loan type, purpose, occupancy, term)"
        )));
    }
    let args: Args = parse_arguments(arguments)?;
    let scenario = Scenario {
        property_state: args.property_state,
        loan_amount: decimal("loanAmount", &args.loan_amount)?,
        property_value: args
            .property_value
            .as_ref()
            .map(|v| decimal("propertyValue", v))
            .transpose()?,
        ltv: args.ltv.as_ref().map(|v| decimal("ltv", v)).transpose()?,
        credit_score: args.credit_score,
        loan_type: args.loan_type,
        purpose: args.purpose.unwrap_or_else(|| "Purchase".into()),
        occupancy: args.occupancy.unwrap_or_else(|| "PrimaryResidence".into()),
        term_months: args.term_months.unwrap_or(360),
        lock_days: args.lock_days.unwrap_or(30),
    };
    let priced = pricing::quote(&scenario)?;
    let effective = priced.quotes.first().map(|q| q.effective_date.clone());
    Ok(json!({
        "indicative": true,
        "disclaimer": INDICATIVE,
        "effectiveDate": effective,
        "scenario": {
            "propertyState": scenario.property_state.trim().to_ascii_uppercase(),
            "loanAmount": scenario.loan_amount,
            "ltv": priced.ltv,
            "creditScore": scenario.credit_score,
            "loanType": scenario.loan_type,
            "purpose": scenario.purpose,
            "occupancy": scenario.occupancy,
            "termMonths": scenario.term_months,
            "lockDays": scenario.lock_days,
        },
        "quotes": priced.quotes.into_iter().map(|q| json!({
            "product": q.product,
            "rate": q.rate,
            "points": q.points,
        })).collect::<Vec<_>>(),
    }))
}

fn input_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["propertyState", "loanAmount", "creditScore", "loanType"],
        "properties": {
            "propertyState": {"type": "string", "minLength": 2, "maxLength": 2, "description": "The property's two-letter state code, e.g. TX."},
            "loanAmount": {"type": ["number", "string"], "description": "The loan amount in dollars."},
            "propertyValue": {"type": ["number", "string"], "description": "The property's value (give this or ltv)."},
            "ltv": {"type": ["number", "string"], "description": "Loan-to-value in percent, e.g. 80 (give this or propertyValue)."},
            "creditScore": {"type": "integer", "minimum": 300, "maximum": 850},
            "loanType": {"type": "string", "enum": ["Conventional", "FHA", "VA", "USDA/Rural Housing"]},
            "purpose": {"type": "string", "enum": ["Purchase", "Refinance", "Refinance Cashout"], "default": "Purchase"},
            "occupancy": {"type": "string", "enum": ["PrimaryResidence", "SecondHome", "Investment"], "default": "PrimaryResidence"},
            "termMonths": {"type": "integer", "minimum": 1, "maximum": 600, "default": 360},
            "lockDays": {"type": "integer", "minimum": 1, "maximum": 365, "default": 30}
        }
    })
}

fn output_schema() -> Value {
    json!({
        "type": "object",
        "required": ["indicative", "disclaimer", "effectiveDate", "scenario", "quotes"],
        "properties": {
            "indicative": {"const": true},
            "disclaimer": {"type": "string"},
            "effectiveDate": {"type": ["string", "null"], "description": "The rate sheet's effective date (null when no product fits)."},
            "scenario": {"type": "object", "description": "The scenario as priced (ltv rounded up to the hundredth)."},
            "quotes": {"type": "array", "items": {
                "type": "object",
                "required": ["product", "rate", "points"],
                "additionalProperties": false,
                "properties": {
                    "product": {"type": "string"},
                    "rate": {"type": "string", "description": "Note rate in percent, exact decimal."},
                    "points": {"type": "string", "description": "Points in percent of the amount; negative is a credit."}
                }
            }}
        }
    })
}

loanhost_guest::export_tool!(SearchPricing);
