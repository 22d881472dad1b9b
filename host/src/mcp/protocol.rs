//! JSON-RPC 2.0 framing for MCP: classifying incoming messages and shaping responses and
//! errors. No HTTP here.
use bytes::Bytes;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::body::{Count, Sink};

/// The handshake-era protocol versions this server speaks, newest first (the modern
/// revision is in [`super::modern`]).
pub const SUPPORTED_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];
/// The version a client without `MCP-Protocol-Version` is assumed to speak.
pub const DEFAULT_VERSION: &str = "2025-03-26";
/// The only version that allows JSON-RPC batches.
pub const BATCH_VERSION: &str = "2025-03-26";

/// Invalid JSON.
pub const PARSE_ERROR: i64 = -32700;
/// Not a valid JSON-RPC request object.
pub const INVALID_REQUEST: i64 = -32600;
/// Unknown method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters (including an unknown tool name).
pub const INVALID_PARAMS: i64 = -32602;
/// Internal JSON-RPC error.
pub const INTERNAL_ERROR: i64 = -32603;
/// 2026-07-28: the HTTP headers do not match the request body (HTTP `400`).
pub const HEADER_MISMATCH: i64 = -32020;
/// 2026-07-28: the request's protocol version is not served; `data` lists the versions that
/// are (HTTP `400`).
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// The caller's budget refused the request (HTTP `429`, `Retry-After`); `data` holds
/// `retryAfterSeconds`.
pub const RATE_LIMITED: i64 = -32050;
/// The server or its database cannot take the request now (HTTP `503`, `Retry-After`).
pub const SERVER_UNAVAILABLE: i64 = -32051;

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The JSON-RPC error code.
    pub code: i64,
    /// A precise message.
    pub message: String,
    /// Structured details, when there are any.
    pub data: Option<Value>,
    /// For an error that asks the client to come back, after how many seconds (also in
    /// `data.retryAfterSeconds`, where the client reads it): the transport sends it as
    /// `Retry-After` and holds the token that long.
    pub retry_after: Option<u64>,
}

impl RpcError {
    /// An error with a code and message.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
            retry_after: None,
        }
    }

    /// The same error with `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// An error that asks the client to come back (`RATE_LIMITED`, `SERVER_UNAVAILABLE`):
    /// `data.retryAfterSeconds` says when.
    pub fn retry_later(code: i64, message: impl Into<String>, retry_after_secs: u64) -> Self {
        RpcError {
            retry_after: Some(retry_after_secs),
            ..RpcError::new(code, message)
                .with_data(json!({ "retryAfterSeconds": retry_after_secs }))
        }
    }
}

/// One incoming JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request, which gets a response.
    Request {
        /// The request id (string or number).
        id: Value,
        /// The method.
        method: String,
        /// The params (an object or array) if any.
        params: Option<Value>,
    },
    /// A notification (no id): answered `202` with no body.
    Notification {
        /// The method.
        method: String,
    },
    /// A response from the client (to a server request): accepted and ignored.
    Response,
}

/// Classifies a message; an invalid one yields the error and the id to answer with.
pub fn classify(message: Value) -> Result<Incoming, (Value, RpcError)> {
    let Value::Object(mut obj) = message else {
        return Err((
            Value::Null,
            RpcError::new(INVALID_REQUEST, "a JSON-RPC message must be an object"),
        ));
    };
    let id = obj.remove("id");
    let reply_id = id.clone().filter(valid_id).unwrap_or(Value::Null);
    let invalid = |m: &str| Err((reply_id.clone(), RpcError::new(INVALID_REQUEST, m)));
    if obj.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return invalid("`jsonrpc` must be \"2.0\"");
    }
    if let Some(id) = &id {
        if !valid_id(id) {
            return invalid("`id` must be a string or an integer");
        }
    }
    match obj.remove("method") {
        Some(Value::String(method)) => {
            let params = obj.remove("params");
            if let Some(p) = &params {
                if !(p.is_object() || p.is_array()) {
                    return invalid("`params` must be an object or an array");
                }
            }
            Ok(match id {
                Some(id) => Incoming::Request { id, method, params },
                None => Incoming::Notification { method },
            })
        }
        Some(_) => invalid("`method` must be a string"),
        None if id.is_some() && (obj.contains_key("result") || obj.contains_key("error")) => {
            Ok(Incoming::Response)
        }
        None => invalid("`method` is missing"),
    }
}

fn valid_id(id: &Value) -> bool {
    id.is_string() || id.as_i64().is_some() || id.as_u64().is_some()
}

/// A method's result as the response carries it: a JSON value and, for a tool's result,
/// the plugin's own JSON text as `structuredContent`, copied into the response as it is
/// (checked to be one JSON object when it came out of the plugin, never parsed into a tree
/// and written out again).
#[derive(Debug, Default)]
pub struct Reply {
    /// The result; when `structured` or `shared` is set, an object whose members precede
    /// them.
    pub value: Value,
    /// `structuredContent`, written after `value`'s members.
    pub structured: Option<Box<RawValue>>,
    /// Members whose JSON text is shared with every other response that serves it (a view's
    /// contents), written last and never copied into the response (see [`Reply::write_to`]).
    /// Each is valid JSON text.
    pub shared: Vec<(&'static str, Bytes)>,
}

impl From<Value> for Reply {
    fn from(value: Value) -> Self {
        Reply {
            value,
            ..Reply::default()
        }
    }
}

impl Reply {
    /// Writes the result into a response body: owned members are serialized, shared ones
    /// referenced.
    pub fn write_to<S: Sink>(&self, out: &mut S) {
        let members = match &self.value {
            Value::Object(m) if self.structured.is_some() || !self.shared.is_empty() => m,
            value => {
                let _ = serde_json::to_writer(out, value);
                return;
            }
        };
        let _ = out.write_all(b"{");
        let mut first = true;
        let mut key = |out: &mut S, k: &str| {
            if !std::mem::take(&mut first) {
                let _ = out.write_all(b",");
            }
            let _ = serde_json::to_writer(&mut *out, k);
            let _ = out.write_all(b":");
        };
        for (k, v) in members.iter().filter(|(k, _)| !self.is_raw_member(k)) {
            key(out, k);
            let _ = serde_json::to_writer(&mut *out, v);
        }
        if let Some(raw) = &self.structured {
            key(out, "structuredContent");
            let _ = out.write_all(raw.get().as_bytes());
        }
        for (k, bytes) in &self.shared {
            key(out, k);
            out.shared(bytes);
        }
        let _ = out.write_all(b"}");
    }

    /// The length of the result as [`Reply::write_to`] writes it (counted, not kept).
    pub fn encoded_len(&self) -> usize {
        let mut count = Count::default();
        self.write_to(&mut count);
        count.0
    }

    fn is_raw_member(&self, k: &str) -> bool {
        (k == "structuredContent" && self.structured.is_some())
            || self.shared.iter().any(|(s, _)| *s == k)
    }
}

/// A JSON-RPC response as it is written: a result, or an error response (a whole
/// [`failure`]).
#[derive(Debug)]
pub enum Outgoing {
    /// A success response.
    Result {
        /// The request's id.
        id: Value,
        /// The method's result.
        result: Reply,
    },
    /// An error response.
    Error {
        /// The request's id (`null` when it had none that is valid).
        id: Value,
        /// The error.
        error: RpcError,
    },
}

impl Outgoing {
    /// The error, if this is an error response.
    pub fn error(&self) -> Option<&RpcError> {
        match self {
            Outgoing::Error { error, .. } => Some(error),
            Outgoing::Result { .. } => None,
        }
    }

    /// The request's id.
    pub fn id(&self) -> &Value {
        match self {
            Outgoing::Result { id, .. } | Outgoing::Error { id, .. } => id,
        }
    }

    /// Writes the response into a body, shared members referenced, not copied.
    pub fn write_to<S: Sink>(&self, out: &mut S) {
        match self {
            Outgoing::Result { id, result } => {
                let _ = out.write_all(br#"{"jsonrpc":"2.0","id":"#);
                let _ = serde_json::to_writer(&mut *out, id);
                let _ = out.write_all(br#","result":"#);
                result.write_to(out);
                let _ = out.write_all(b"}");
            }
            Outgoing::Error { id, error } => {
                let _ = serde_json::to_writer(out, &failure(id.clone(), error));
            }
        }
    }
}

/// A JSON object of owned values, moved in as they are.
pub fn object<const N: usize>(fields: [(&str, Value); N]) -> Value {
    Value::Object(
        fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

/// An error response.
pub fn failure(id: Value, error: &RpcError) -> Value {
    let mut e = json!({"code": error.code, "message": error.message});
    if let Some(data) = &error.data {
        e["data"] = data.clone();
    }
    json!({"jsonrpc": "2.0", "id": id, "error": e})
}

/// The object params of a request (`{}` when absent); arrays are refused.
pub fn object_params(params: Option<Value>) -> Result<Map<String, Value>, RpcError> {
    match params {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m),
        Some(_) => Err(RpcError::new(INVALID_PARAMS, "params must be an object")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_requests_notifications_and_responses() {
        assert_eq!(
            classify(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).unwrap(),
            Incoming::Request {
                id: json!(1),
                method: "ping".into(),
                params: None
            }
        );
        assert_eq!(
            classify(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap(),
            Incoming::Notification {
                method: "notifications/initialized".into()
            }
        );
        assert_eq!(
            classify(json!({"jsonrpc": "2.0", "id": 1, "result": {}})).unwrap(),
            Incoming::Response
        );
    }

    #[test]
    fn invalid_messages_keep_a_valid_id() {
        let (id, e) = classify(json!({"jsonrpc": "1.0", "id": "a", "method": "ping"})).unwrap_err();
        assert_eq!((id, e.code), (json!("a"), INVALID_REQUEST));
        let (id, e) =
            classify(json!({"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"})).unwrap_err();
        assert_eq!((id, e.code), (Value::Null, INVALID_REQUEST));
        let (_, e) =
            classify(json!({"jsonrpc": "2.0", "id": 1, "method": "x", "params": 3})).unwrap_err();
        assert_eq!(e.code, INVALID_REQUEST);
        let (_, e) = classify(json!([1])).unwrap_err();
        assert_eq!(e.code, INVALID_REQUEST);
    }

    /// `out` as the response body carries it.
    fn written(out: &Outgoing) -> String {
        let mut body = crate::mcp::body::Chunks::default();
        out.write_to(&mut body);
        String::from_utf8(body.concat()).unwrap()
    }

    #[test]
    fn a_tool_result_is_written_with_its_structured_content_as_the_plugin_wrote_it() {
        // Arrange: digits an f64 would not keep, and a member order a tree would not keep.
        let text = r#"{"z":1,"total":12345678901234567890.10,"a":[1.50]}"#;
        let reply = Reply {
            value: json!({"content": [{"type": "text", "text": text}], "isError": false}),
            structured: Some(RawValue::from_string(text.to_string()).unwrap()),
            ..Reply::default()
        };
        // Act
        let written = written(&Outgoing::Result {
            id: json!(7),
            result: reply,
        });
        // Assert
        assert!(written.starts_with(r#"{"jsonrpc":"2.0","id":7,"result":{"#));
        assert!(written.ends_with(&format!(r#","structuredContent":{text}}}}}"#)));
        let parsed: Value = serde_json::from_str(&written).unwrap();
        assert_eq!(parsed["result"]["content"][0]["text"], text);
        assert_eq!(parsed["result"]["isError"], false);
    }

    #[test]
    fn other_results_and_errors_are_written_as_their_values() {
        let plain = Outgoing::Result {
            id: json!("a"),
            result: json!({"tools": []}).into(),
        };
        assert_eq!(
            serde_json::from_str::<Value>(&written(&plain)).unwrap(),
            json!({"jsonrpc": "2.0", "id": "a", "result": {"tools": []}})
        );
        let e = Outgoing::Error {
            id: json!(1),
            error: RpcError::retry_later(RATE_LIMITED, "slow", 3),
        };
        assert_eq!(e.error().and_then(|e| e.retry_after), Some(3));
        assert_eq!(
            serde_json::from_str::<Value>(&written(&e)).unwrap(),
            json!({"jsonrpc": "2.0", "id": 1, "error": {
                "code": RATE_LIMITED, "message": "slow", "data": {"retryAfterSeconds": 3}
            }})
        );
        assert!(plain.error().is_none());
    }

    mod fuzz {
        use super::*;
        use proptest::prelude::*;

        /// Arbitrary JSON values, a few levels deep, with the keys JSON-RPC reads.
        fn json_value() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                any::<i64>().prop_map(|i| json!(i)),
                any::<f64>().prop_map(|f| json!(f)),
                ".{0,12}".prop_map(Value::String),
                Just(json!("2.0")),
                Just(json!("tools/call")),
            ];
            leaf.prop_recursive(3, 24, 6, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                    prop::collection::vec(
                        (
                            prop_oneof![
                                Just("jsonrpc".to_string()),
                                Just("id".to_string()),
                                Just("method".to_string()),
                                Just("params".to_string()),
                                Just("result".to_string()),
                                Just("error".to_string()),
                                "[a-z]{1,6}"
                            ],
                            inner
                        ),
                        0..6
                    )
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
                ]
            })
        }

        proptest! {
            #[test]
            fn fuzz_framing_never_panics_and_keeps_valid_ids(v in json_value()) {
                match classify(v.clone()) {
                    Ok(Incoming::Request { id, method, .. }) => {
                        prop_assert!(valid_id(&id));
                        prop_assert_eq!(Some(&Value::String(method)), v.get("method"));
                        prop_assert_eq!(v.get("jsonrpc"), Some(&json!("2.0")));
                    }
                    Ok(_) => {}
                    Err((id, e)) => {
                        prop_assert!(id.is_null() || valid_id(&id));
                        prop_assert!(matches!(e.code, INVALID_REQUEST));
                        let reply = failure(id, &e);
                        prop_assert_eq!(&reply["jsonrpc"], &json!("2.0"));
                    }
                }
            }

            #[test]
            fn fuzz_framing_of_raw_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
                if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
                    let _ = classify(v);
                }
            }
        }
    }
}
