//! The 2026-07-28 revision ("modern" MCP): no handshake and no session; every request carries
//! its protocol version and client capabilities in `params._meta`, mirrored into the
//! `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers, and every result carries
//! `resultType` and the server's identity. This module decides which revision a request speaks,
//! validates the envelope and headers in the specification's order, and shapes the results.
//! No HTTP framework here: headers come in as a plain lookup.

use base64::Engine as _;
use serde_json::{json, Map, Value};

use super::protocol::{
    Reply, RpcError, HEADER_MISMATCH, INVALID_PARAMS, SUPPORTED_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
};

/// The modern revision this server speaks.
pub const MODERN_VERSION: &str = "2026-07-28";

/// `_meta` key of the request's protocol version.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of the client's capabilities.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key of the server's identity on results.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// How long a client may cache `tools/list`, `server/discover` and `resources/*` results, in
/// milliseconds.
/// Plugins are hot-reloaded and this server sends no change notifications, so the hint is short.
pub const LIST_TTL_MS: u64 = 30_000;

/// Every protocol version served, newest first (what `server/discover` and `-32022` list).
pub fn all_versions() -> Vec<&'static str> {
    std::iter::once(MODERN_VERSION)
        .chain(SUPPORTED_VERSIONS.iter().copied())
        .collect()
}

/// Whether a request speaks the modern revision: its `MCP-Protocol-Version` header names
/// anything but a handshake-era version (unknown values are answered by the modern rules,
/// which name the versions served), or, without the header, its `_meta` carries a protocol
/// version.
pub fn is_modern(version_header: Option<&str>, body: &Value) -> bool {
    match version_header {
        Some(v) => !SUPPORTED_VERSIONS.contains(&v.trim()),
        None => envelope_version(body.get("params")).is_some(),
    }
}

/// The protocol version a request's `params._meta` carries, if any.
fn envelope_version(params: Option<&Value>) -> Option<&Value> {
    params?.get("_meta")?.get(META_PROTOCOL_VERSION)
}

/// `-32022`: `requested` is not served; `data` lists the versions that are.
fn unsupported(requested: &str) -> RpcError {
    RpcError::new(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version")
        .with_data(json!({"supported": all_versions(), "requested": requested}))
}

/// The header names that mirror the body (checked for duplicates too).
const ROUTING_HEADERS: [&str; 3] = ["mcp-protocol-version", "mcp-method", "mcp-name"];

/// Validates a modern request, in the specification's order: the `_meta` envelope
/// (`-32602`), then the headers against the body (`-32020`), then the version (`-32022`).
/// An unknown `MCP-Protocol-Version` with no envelope version to compare it with is answered
/// with `-32022` at once (a handshake-era client learns what to speak).
/// `header(name)` returns every value of a header (lower-case name).
pub fn validate(
    method: &str,
    params: Option<&Value>,
    header: impl Fn(&str) -> Vec<String>,
) -> Result<(), RpcError> {
    if envelope_version(params).is_none() {
        if let Some(v) = header("mcp-protocol-version").first().map(|v| v.trim()) {
            if v != MODERN_VERSION {
                return Err(unsupported(v));
            }
        }
    }
    let meta = params
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object)
        .ok_or_else(|| {
            RpcError::new(
                INVALID_PARAMS,
                format!("params._meta must be an object carrying `{META_PROTOCOL_VERSION}` and `{META_CLIENT_CAPABILITIES}` (protocol version {MODERN_VERSION})"),
            )
        })?;
    let missing: Vec<&str> = [META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES]
        .into_iter()
        .filter(|k| !meta.contains_key(*k))
        .collect();
    if !missing.is_empty() {
        return Err(RpcError::new(
            INVALID_PARAMS,
            format!("params._meta is missing {}", missing.join(" and ")),
        ));
    }
    let version = &meta[META_PROTOCOL_VERSION];

    let mismatch = |m: String| {
        Err(RpcError::new(
            HEADER_MISMATCH,
            format!("Header mismatch: {m}"),
        ))
    };
    for name in ROUTING_HEADERS {
        if header(name).len() > 1 {
            return mismatch(format!("the {name} header appears more than once"));
        }
    }
    let one = |name: &str| header(name).into_iter().next();
    match one("mcp-protocol-version") {
        None => return mismatch("the MCP-Protocol-Version header is missing".into()),
        Some(h) if Some(h.trim()) != version.as_str() => {
            return mismatch(format!(
                "MCP-Protocol-Version header value '{}' does not match the body's {META_PROTOCOL_VERSION} {version}",
                h.trim()
            ))
        }
        Some(_) => {}
    }
    match one("mcp-method") {
        None => return mismatch("the Mcp-Method header is missing".into()),
        Some(h) if h.trim() != method => {
            return mismatch(format!(
                "Mcp-Method header value '{}' does not match body value '{method}'",
                h.trim()
            ))
        }
        Some(_) => {}
    }
    // `Mcp-Name` mirrors `params.name` of `tools/call` and `params.uri` of `resources/read`.
    let named = match method {
        "tools/call" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    };
    if let Some(field) = named {
        if let Some(name) = params.and_then(|p| p.get(field)).and_then(Value::as_str) {
            match one("mcp-name") {
                None => return mismatch("the Mcp-Name header is missing".into()),
                Some(h) => match decode_header_value(h.trim()) {
                    Some(v) if v == name => {}
                    Some(v) => {
                        return mismatch(format!(
                            "Mcp-Name header value '{v}' does not match body value '{name}'"
                        ))
                    }
                    None => {
                        return mismatch(
                            "the Mcp-Name header is not valid Base64 in its =?base64?…?= form"
                                .into(),
                        )
                    }
                },
            }
        }
    }

    match version.as_str() {
        Some(MODERN_VERSION) => Ok(()),
        Some(other) => Err(unsupported(other)),
        None => Err(RpcError::new(
            INVALID_PARAMS,
            format!("`{META_PROTOCOL_VERSION}` must be a string"),
        )),
    }
}

/// A header value as sent: verbatim, or the UTF-8 text inside `=?base64?…?=` (`None` when that
/// is not canonical Base64 of UTF-8).
pub fn decode_header_value(value: &str) -> Option<String> {
    let Some(inner) = value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    else {
        return Some(value.to_string());
    };
    let engine = base64::engine::general_purpose::STANDARD;
    let bytes = engine.decode(inner).ok()?;
    if engine.encode(&bytes) != inner {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// The server's identity, as `serverInfo` / `_meta` carry it.
pub fn server_info() -> Value {
    json!({"name": "loanhost", "title": "Loan reporting", "version": env!("CARGO_PKG_VERSION")})
}

/// Shapes a modern result: `resultType` and the server's identity in `_meta`; list and
/// discovery results also carry their caching hints.
pub fn decorate(method: &str, reply: Reply) -> Reply {
    let Reply {
        value,
        structured,
        shared,
    } = reply;
    let mut result = match value {
        Value::Object(m) => m,
        other => {
            let mut m = Map::new();
            m.insert("value".into(), other);
            m
        }
    };
    result.insert("resultType".into(), json!("complete"));
    let meta = result
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert(META_SERVER_INFO.into(), server_info());
    }
    if matches!(
        method,
        "tools/list"
            | "server/discover"
            | "resources/list"
            | "resources/templates/list"
            | "resources/read"
    ) {
        result.insert("ttlMs".into(), json!(LIST_TTL_MS));
        result.insert("cacheScope".into(), json!("private"));
    }
    Reply {
        value: Value::Object(result),
        structured,
        shared,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Vec<String> + 'a {
        move |name: &str| {
            pairs
                .iter()
                .filter(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.to_string())
                .collect()
        }
    }

    fn params(version: &str) -> Value {
        json!({"name": "report_loans", "_meta": {META_PROTOCOL_VERSION: version, META_CLIENT_CAPABILITIES: {}}})
    }

    #[test]
    fn the_era_comes_from_the_header_or_the_meta() {
        assert!(is_modern(Some("2026-07-28"), &json!({})));
        assert!(is_modern(Some("1900-01-01"), &json!({})));
        assert!(!is_modern(
            Some("2025-11-25"),
            &json!({"params": params("2026-07-28")})
        ));
        assert!(is_modern(None, &json!({"params": params("2026-07-28")})));
        assert!(!is_modern(None, &json!({"params": {}})));
    }

    #[test]
    fn the_ladder_checks_meta_then_headers_then_version() {
        let good = [
            ("MCP-Protocol-Version", "2026-07-28"),
            ("mcp-method", " tools/call "),
            ("Mcp-Name", "=?base64?cmVwb3J0X2xvYW5z?="),
        ];
        assert_eq!(
            validate("tools/call", Some(&params("2026-07-28")), headers(&good)),
            Ok(())
        );
        let code = |m: &str, p: Value, h: &[(&str, &str)]| {
            validate(m, Some(&p), headers(h)).unwrap_err().code
        };
        assert_eq!(code("tools/list", json!({}), &good), INVALID_PARAMS);
        assert_eq!(
            code("tools/call", params("2026-07-28"), &[good[0], good[1]]),
            HEADER_MISMATCH
        );
        assert_eq!(
            code(
                "tools/call",
                params("2026-07-28"),
                &[good[0], ("Mcp-Method", "TOOLS/CALL"), good[2]]
            ),
            HEADER_MISMATCH
        );
        assert_eq!(
            code(
                "tools/call",
                params("2026-07-28"),
                &[good[0], good[1], good[2], ("mcp-method", "tools/call")]
            ),
            HEADER_MISMATCH
        );
        let e = validate(
            "tools/list",
            Some(&params("v999")),
            headers(&[
                ("MCP-Protocol-Version", "v999"),
                ("Mcp-Method", "tools/list"),
            ]),
        )
        .unwrap_err();
        assert_eq!(e.code, UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(e.data.unwrap()["requested"], "v999");
    }

    #[test]
    fn base64_header_values_are_decoded_strictly() {
        assert_eq!(decode_header_value("plain").as_deref(), Some("plain"));
        assert_eq!(
            decode_header_value("=?base64?SGVsbG8=?=").as_deref(),
            Some("Hello")
        );
        assert_eq!(decode_header_value("=?base64?SGVsbG8?="), None);
        assert_eq!(
            decode_header_value("=?base64?SGVsbG8=").as_deref(),
            Some("=?base64?SGVsbG8=")
        );
    }

    #[test]
    fn results_carry_result_type_server_info_and_cache_hints() {
        let r = decorate("tools/list", json!({"tools": []}).into()).value;
        assert_eq!(r["resultType"], "complete");
        assert_eq!(r["_meta"][META_SERVER_INFO]["name"], "loanhost");
        assert_eq!(
            (r["ttlMs"].clone(), r["cacheScope"].clone()),
            (json!(LIST_TTL_MS), json!("private"))
        );
        let c = decorate("tools/call", json!({"content": []}).into()).value;
        assert!(c.get("ttlMs").is_none());
    }
}
