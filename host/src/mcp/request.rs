//! A JSON-RPC request as the dispatcher takes it: its id, its method named once (one of the
//! MCP methods this server knows, or another name) and its params.

use serde_json::Value;

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

#[cfg(test)]
mod tests {
    use super::*;

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
        let params = Some(serde_json::json!({"name": "report_loans"}));
        let call = Request::new(1.into(), "tools/call".into(), params.clone());
        let read = Request::new(1.into(), "resources/read".into(), params);
        assert_eq!(call.tool_name(), Some("report_loans"));
        assert_eq!(read.tool_name(), None);
    }
}
