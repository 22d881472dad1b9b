//! Typed argument parsing: every way arguments can be wrong becomes one precise
//! `invalid_params` message (unknown property, wrong type, unknown enum value with the
//! accepted values named).

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

use crate::ToolError;

/// The arguments of a tool that takes none: any property is refused.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoArguments {}

/// Parses the client's arguments into `T` (use `#[serde(deny_unknown_fields)]` and
/// `rename_all = "camelCase"` on `T`). `null` counts as `{}`; anything but an object is
/// refused.
pub fn parse_arguments<T: DeserializeOwned>(arguments: Value) -> Result<T, ToolError> {
    let arguments = match arguments {
        Value::Null => Value::Object(Default::default()),
        Value::Object(map) => Value::Object(map),
        other => {
            return Err(ToolError::invalid_params(format!(
                "arguments must be a JSON object, got {}",
                kind_of(&other)
            )))
        }
    };
    // The error names the argument it is about (`lookback: invalid type: string "2", expected
    // i64`), nested ones by their path (`filter.loanTypes[0]: …`).
    serde_path_to_error::deserialize(arguments).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        if path == "." || inner.contains("unknown field") {
            ToolError::invalid_params(inner)
        } else {
            ToolError::invalid_params(format!("{path}: {inner}"))
        }
    })
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Args {
        #[serde(default)]
        group_by: Option<Mode>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    enum Mode {
        None,
        Status,
    }

    fn message(e: ToolError) -> String {
        match e {
            ToolError::InvalidParams(m) => m,
            other => panic!("expected invalid_params, got {other:?}"),
        }
    }

    #[test]
    fn null_is_empty_object() {
        let a: Args = parse_arguments(Value::Null).unwrap();
        assert!(a.group_by.is_none());
    }

    #[test]
    fn unknown_property_is_named() {
        let m = message(parse_arguments::<Args>(json!({"colour": 1})).unwrap_err());
        assert!(m.contains("unknown field `colour`"), "{m}");
    }

    #[test]
    fn unknown_enum_value_names_accepted_values() {
        let m = message(parse_arguments::<Args>(json!({"groupBy": "Officer"})).unwrap_err());
        assert!(m.contains("`None`") && m.contains("`Status`"), "{m}");
    }

    #[allow(dead_code)] // read only through Debug: the test is about the errors
    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Numbers {
        #[serde(default)]
        lookback: Option<i64>,
        #[serde(default)]
        inner: Option<Inner>,
    }

    #[allow(dead_code)]
    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Inner {
        values: Vec<i64>,
    }

    #[test]
    fn a_wrong_type_names_the_argument() {
        let m = message(parse_arguments::<Numbers>(json!({"lookback": "2"})).unwrap_err());
        assert_eq!(m, "lookback: invalid type: string \"2\", expected i64");
        let m = message(
            parse_arguments::<Numbers>(json!({"inner": {"values": [1, "x"]}})).unwrap_err(),
        );
        assert!(m.starts_with("inner.values[1]: invalid type"), "{m}");
    }

    #[test]
    fn non_object_refused() {
        let m = message(parse_arguments::<Args>(json!([1])).unwrap_err());
        assert_eq!(m, "arguments must be a JSON object, got an array");
    }
}
