//! A JSON-RPC request as the dispatcher takes it: its id, its method named once (one of the
//! MCP methods this server knows, or another name) and its params; a `tools/call`'s name and
//! arguments read from them, bounded in depth.

use serde_json::Value;

use super::protocol::{object_params, RpcError, INVALID_PARAMS};

/// The method of a request, read once from its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Method {
    /// `initialize` (handshake-era revisions).
    Initialize,
    /// `ping` (handshake-era revisions).
    Ping,
    /// `server/discover` (2026-07-28).
    ServerDiscover,
    /// `tools/list`.
    ToolsList,
    /// `tools/call`.
    ToolsCall,
    /// `resources/list`.
    ResourcesList,
    /// `resources/templates/list`.
    ResourcesTemplatesList,
    /// `resources/read`.
    ResourcesRead,
    /// Any other name (answered "method not found").
    Other(String),
}

impl Method {
    /// The method a name names.
    pub fn parse(name: String) -> Method {
        Method::known(&name).unwrap_or(Method::Other(name))
    }

    /// The method of a name this server knows, if it is one.
    pub fn known(name: &str) -> Option<Method> {
        Some(match name {
            "initialize" => Method::Initialize,
            "ping" => Method::Ping,
            "server/discover" => Method::ServerDiscover,
            "tools/list" => Method::ToolsList,
            "tools/call" => Method::ToolsCall,
            "resources/list" => Method::ResourcesList,
            "resources/templates/list" => Method::ResourcesTemplatesList,
            "resources/read" => Method::ResourcesRead,
            _ => return None,
        })
    }

    /// The method's name as the request spelled it.
    pub fn as_str(&self) -> &str {
        match self {
            Method::Initialize => "initialize",
            Method::Ping => "ping",
            Method::ServerDiscover => "server/discover",
            Method::ToolsList => "tools/list",
            Method::ToolsCall => "tools/call",
            Method::ResourcesList => "resources/list",
            Method::ResourcesTemplatesList => "resources/templates/list",
            Method::ResourcesRead => "resources/read",
            Method::Other(name) => name,
        }
    }
}

/// One request: what the dispatcher answers.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The request id (a string or an integer).
    pub id: Value,
    /// The method.
    pub method: Method,
    /// The params (an object or an array), if any.
    pub params: Option<Value>,
}

impl Request {
    /// A request of `method` (a name) with `id` and `params`.
    pub fn new(id: Value, method: String, params: Option<Value>) -> Request {
        Request {
            id,
            method: Method::parse(method),
            params,
        }
    }

    /// The tool a `tools/call` names, if its params name one.
    pub fn tool_name(&self) -> Option<&str> {
        if self.method != Method::ToolsCall {
            return None;
        }
        self.params.as_ref()?.get("name")?.as_str()
    }
}

/// How deep a tool's arguments may nest (the deepest shipped schema nests 3 levels); deeper
/// ones are refused before a plugin parses them.
pub const MAX_ARGUMENT_DEPTH: usize = 32;

/// Whether `v` nests deeper than `max` levels of objects and arrays.
fn deeper_than(v: &Value, max: usize) -> bool {
    let mut stack = vec![(v, 0usize)];
    while let Some((v, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Object(m) => Box::new(m.values()),
            Value::Array(a) => Box::new(a.iter()),
            _ => continue,
        };
        if depth + 1 > max {
            return true;
        }
        stack.extend(children.map(|c| (c, depth + 1)));
    }
    false
}

/// The tool name and arguments of a `tools/call`; when they are malformed, the error and the
/// name if there was one.
pub(super) fn call_params(
    params: Option<Value>,
) -> Result<(String, Value), (Option<String>, RpcError)> {
    let mut params = object_params(params).map_err(|e| (None, e))?;
    let name = match params.remove("name") {
        Some(Value::String(n)) => n,
        Some(_) => {
            return Err((
                None,
                RpcError::new(INVALID_PARAMS, "`name` must be a string"),
            ))
        }
        None => return Err((None, RpcError::new(INVALID_PARAMS, "`name` is required"))),
    };
    let arguments = params.remove("arguments").unwrap_or(Value::Null);
    if !(arguments.is_object() || arguments.is_null()) {
        return Err((
            Some(name),
            RpcError::new(INVALID_PARAMS, "`arguments` must be an object"),
        ));
    }
    if deeper_than(&arguments, MAX_ARGUMENT_DEPTH) {
        return Err((
            Some(name),
            RpcError::new(
                INVALID_PARAMS,
                format!("`arguments` nest deeper than {MAX_ARGUMENT_DEPTH} levels"),
            ),
        ));
    }
    Ok((name, arguments))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_known_method_reads_back_as_its_name_and_others_keep_theirs() {
        for name in [
            "initialize",
            "ping",
            "server/discover",
            "tools/list",
            "tools/call",
            "resources/list",
            "resources/templates/list",
            "resources/read",
            "evil/method",
            "",
        ] {
            let method = Method::parse(name.to_string());
            assert_eq!(method.as_str(), name);
            assert_eq!(
                matches!(method, Method::Other(_)),
                name == "evil/method" || name.is_empty()
            );
        }
    }

    #[test]
    fn only_a_tool_call_names_a_tool() {
        let params = Some(json!({"name": "report_loans"}));
        let call = Request::new(1.into(), "tools/call".into(), params.clone());
        let read = Request::new(1.into(), "resources/read".into(), params);
        assert_eq!(call.tool_name(), Some("report_loans"));
        assert_eq!(read.tool_name(), None);
    }

    #[test]
    fn arguments_deeper_than_the_cap_are_refused_before_any_plugin() {
        let nest = |n: usize| (0..n).fold(json!(1), |v, _| json!({ "k": v }));
        assert!(!deeper_than(&nest(MAX_ARGUMENT_DEPTH), MAX_ARGUMENT_DEPTH));
        assert!(deeper_than(
            &nest(MAX_ARGUMENT_DEPTH + 1),
            MAX_ARGUMENT_DEPTH
        ));
        assert!(deeper_than(&json!([[[1]]]), 2));
        assert!(!deeper_than(&json!({"a": [1, {"b": 2}], "c": 3}), 3));
        let (_, e) = call_params(Some(json!({"name": "t", "arguments": nest(40)}))).unwrap_err();
        assert_eq!(e.message, "`arguments` nest deeper than 32 levels");
    }
}
