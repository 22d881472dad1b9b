//! The Rust plugin the scaffold writes: a crate whose `src/lib.rs` counts the caller's loans by
//! status, with two `cargo test`s that call the built component on fixtures.

/// `src/lib.rs` of a new Rust plugin.
pub(super) fn lib_rs(name: &str) -> String {
    let title = name.replace('_', " ");
    format!(
        r#"//! `{name}`: TODO say what it answers. Counts the caller's loans by current status (only
//! loans the caller's role may see; the host applies the scope).

use loanhost_guest::data::{{self, Aggregate, Key, Query, Value as Cell}};
use loanhost_guest::models::schemars::JsonSchema;
use loanhost_guest::{{parse_arguments, Description, Tool, ToolError}};
use serde::{{Deserialize, Serialize}};
use serde_json::{{json, Value}};

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Args {{
    /// Only these statuses (all when absent or empty).
    #[serde(default)]
    statuses: Vec<String>,
}}

/// The result: its JSON Schema (the tool's `outputSchema`) is generated from this type, so
/// what the tool returns and what it promises cannot drift apart. The doc comments become the
/// schema's descriptions.
#[derive(Serialize, JsonSchema)]
#[schemars(crate = "loanhost_guest::models::schemars")]
#[serde(rename_all = "camelCase")]
struct StatusCounts {{
    /// One entry per current status that has loans.
    buckets: Vec<StatusCount>,
}}

/// Loans at one current status.
#[derive(Serialize, JsonSchema)]
#[schemars(crate = "loanhost_guest::models::schemars")]
struct StatusCount {{
    status: String,
    count: u64,
}}

struct Report;

impl Tool for Report {{
    fn describe() -> Description {{
        Description::new(
            "{name}",
            "{title}",
            "Counts the caller's loans by current status. TODO: say when a model should use it.",
        )
        .input_schema(json!({{
            "type": "object",
            "additionalProperties": false,
            "properties": {{
                "statuses": {{"type": "array", "items": {{"type": "string", "enum": &loanhost_guest::vocab::LOAN_STATUSES[..]}}}}
            }}
        }}))
        .output_record::<StatusCounts>()
    }}

    fn call(arguments: Value) -> Result<Value, ToolError> {{
        let args: Args = parse_arguments(arguments)?;
        let filter = (!args.statuses.is_empty()).then(|| json!({{"statuses": args.statuses}}).to_string());
        let rows = data::run(&Query {{
            dataset: "loans".into(),
            filter,
            predicates: vec![],
            group_by: vec![Key::Field("status".into())],
            distinct_on: None,
            aggregates: vec![Aggregate::Count],
            order_by: vec![],
            limit: None,
        }})?;
        let buckets = rows
            .rows
            .iter()
            .map(|r| {{
                let status = match &r[0] {{
                    Cell::Text(s) => s.clone(),
                    _ => "Unknown".into(),
                }};
                let count = match &r[1] {{
                    Cell::Integer(n) => (*n).max(0) as u64,
                    _ => 0,
                }};
                StatusCount {{ status, count }}
            }})
            .collect();
        loanhost_guest::result(&StatusCounts {{ buckets }})
    }}
}}

loanhost_guest::export_tool!(Report);

/// `cargo test` builds this crate to a component and calls it on `tests/fixtures` the way the
/// server would (needs the `loanhost` binary: `make build` in the loanhost checkout).
#[cfg(test)]
mod tests {{
    use serde_json::json;

    fn call(arguments: serde_json::Value) -> Result<serde_json::Value, String> {{
        loanhost_guest::testing::call_on_fixtures(env!("CARGO_MANIFEST_DIR"), "ada@example.com", "tests/fixtures", arguments)
    }}

    #[test]
    fn counts_only_the_callers_loans_by_status() {{
        let r = call(json!({{}})).unwrap();
        assert_eq!(r["buckets"], json!([{{"status": "Loan Funded", "count": 1}}, {{"status": "Loan Open", "count": 2}}]));
    }}

    #[test]
    fn unknown_arguments_are_refused() {{
        let e = call(json!({{"colour": "red"}})).unwrap_err();
        assert!(e.starts_with("invalid_params: unknown field `colour`"), "{{e}}");
    }}
}}
"#
    )
}
