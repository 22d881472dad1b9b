//! `search_users`: the people on the loans of the caller's scope (officers, assistants,
//! processors, referrers) and the caller, by name tokens and by the parts they play, through
//! the `people` capability (loan:reporting@1.2.0). Each with their id (what `filter.
//! loanOfficerIds` and `filter.processorId` take), whether they are the caller, and their
//! parts; names only for callers who may read names (the host decides); emails never
//! (docs/design.md §7.8).

use loanhost_guest::people::{self, Part, PeopleQuery};
use loanhost_guest::{caller, parse_arguments, Description, Tool, ToolError};
use serde::Deserialize;
use serde_json::{json, Value};

/// People an answer holds unless the caller asks for another number.
const DEFAULT_LIMIT: u32 = 25;
/// People an answer holds at most (the host's own cap).
const MAX_LIMIT: u32 = 100;
/// Characters of `query` at most.
const MAX_QUERY_CHARS: usize = 200;
/// Words of `query` at most (the host's own cap).
const MAX_QUERY_WORDS: usize = 8;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Args {
    #[serde(default)]
    query: Option<String>,
    #[serde(default)]
    roles: Option<Vec<String>>,
    #[serde(default)]
    limit: Option<u32>,
}

struct SearchUsers;

impl Tool for SearchUsers {
    fn describe() -> Description {
        Description::new(
            "search_users",
            "Find people on your loans",
            "Finds the people on the loans in the caller's scope (their loan officers, loan \
             assistants, processors and referring agents) and the caller, by name and by the \
             part they play. Use it to find a person's id: filter.loanOfficerIds and \
             filter.processorId of report_loans and query_loans take these ids ('show me \
             Olivia's pipeline': search_users with query 'olivia' and roles ['LoanOfficer'], \
             then query_loans with that id). Call it with no arguments to learn your own id \
             (isCaller: true, listed first). Never use it to count people or loans: it lists at \
             most 100 people and says how many matched; reports count. Names (and searching by \
             name) only for Admin, Processor and ConciergeKey; others search by role and get \
             ids. Emails are never returned.",
        )
        .input_schema(input_schema())
        .output_schema(output_schema())
    }

    fn call(arguments: Value) -> Result<Value, ToolError> {
        answer(arguments)
    }
}

/// The tool's answer.
fn answer(arguments: Value) -> Result<Value, ToolError> {
    let args: Args = parse_arguments(arguments)?;
    let query = args.query.unwrap_or_default();
    if query.chars().count() > MAX_QUERY_CHARS {
        return Err(ToolError::invalid_params(format!(
            "query: {} characters; at most {MAX_QUERY_CHARS}",
            query.chars().count()
        )));
    }
    let name_tokens: Vec<String> = query.split_whitespace().map(str::to_string).collect();
    if name_tokens.len() > MAX_QUERY_WORDS {
        return Err(ToolError::invalid_params(format!(
            "query: {} words; at most {MAX_QUERY_WORDS}",
            name_tokens.len()
        )));
    }
    if !name_tokens.is_empty() && !caller::can_read_names() {
        return Err(ToolError::Forbidden(
            "query: searching people by name needs Admin, Processor or ConciergeKey; search by \
             roles instead (ids, no names), or call with no arguments for your own id"
                .into(),
        ));
    }
    let mut parts = Vec::new();
    for role in args.roles.unwrap_or_default() {
        let Some(part) = Part::parse(&role) else {
            return Err(ToolError::invalid_params(format!(
                "roles: `{role}` is not one of {}",
                Part::ALL.map(Part::name).join(", ")
            )));
        };
        if !parts.contains(&part) {
            parts.push(part);
        }
    }
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT);
    if limit == 0 || limit > MAX_LIMIT {
        return Err(ToolError::invalid_params(format!(
            "limit: {limit} is not between 1 and {MAX_LIMIT}"
        )));
    }
    let found = people::search(&PeopleQuery {
        name_tokens,
        parts,
        limit,
    })?;
    let users: Vec<Value> = found
        .people
        .into_iter()
        .map(|p| {
            let mut user = json!({
                "id": p.id,
                "isCaller": p.is_caller,
                "roles": p.parts.into_iter().map(Part::name).collect::<Vec<_>>(),
            });
            if let Some(name) = p.name {
                user["name"] = Value::String(name);
            }
            user
        })
        .collect();
    Ok(json!({
        "truncated": found.total > users.len() as u64,
        "totalMatched": found.total,
        "users": users,
    }))
}

fn input_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "query": {"type": "string", "maxLength": MAX_QUERY_CHARS,
                      "description": "Name words, case-insensitive; every word must appear in the person's name. Only for Admin, Processor and ConciergeKey."},
            "roles": {"type": "array", "uniqueItems": true,
                      "items": {"type": "string", "enum": Part::ALL.map(Part::name)},
                      "description": "Only people who play one of these parts on a loan in your scope."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT,
                      "description": "People at most."}
        }
    })
}

fn output_schema() -> Value {
    json!({
        "type": "object",
        "required": ["users", "totalMatched", "truncated"],
        "properties": {
            "users": {"type": "array", "items": {
                "type": "object",
                "required": ["id", "isCaller", "roles"],
                "additionalProperties": false,
                "properties": {
                    "id": {"type": "string", "format": "uuid", "description": "The person's user id (filter.loanOfficerIds, filter.processorId)."},
                    "isCaller": {"type": "boolean", "description": "This person is you."},
                    "roles": {"type": "array", "items": {"type": "string", "enum": Part::ALL.map(Part::name)},
                              "description": "The parts they play on the loans in your scope (you may play none)."},
                    "name": {"type": "string", "description": "Only for Admin, Processor and ConciergeKey."}
                }
            }},
            "totalMatched": {"type": "integer", "minimum": 0, "description": "People matching, before the limit."},
            "truncated": {"type": "boolean", "description": "More people matched than are listed: narrow the query."}
        }
    })
}

loanhost_guest::export_tool!(SearchUsers);
