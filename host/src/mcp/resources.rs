//! MCP resources: the plugins' views, served as MCP Apps (`io.modelcontextprotocol/ui`)
//! `ui://` resources. A caller lists and reads only the views of tools their roles may call;
//! any other URI is "not found" (`-32602` with the URI in `data`, as SEP-2164 has it), so a
//! view's existence says nothing to a caller who may not call its tool.

use serde_json::{json, Value};

use super::protocol::{object_params, Reply, RpcError, INVALID_PARAMS};
use crate::identity::Identity;
use crate::plugins::catalog::view::{UI_EXTENSION, VIEW_MIME_TYPE};
use crate::plugins::{Plugin, Registry};

fn ui_meta(plugin: &Plugin) -> Value {
    plugin.view.as_ref().map_or(Value::Null, |v| {
        crate::plugins::catalog::view::ui_meta(&v.decl)
    })
}

/// The views `caller` may see: of the tools their roles may call, in tool-name order.
fn visible<'a>(
    snapshot: &'a std::collections::BTreeMap<String, std::sync::Arc<Plugin>>,
    caller: &'a Identity,
) -> impl Iterator<Item = &'a Plugin> + 'a {
    snapshot
        .values()
        .map(|p| p.as_ref())
        .filter(move |p| p.view.is_some() && caller.has_any(&p.manifest.roles))
}

/// The result of `resources/list`: every view the caller may see (no pagination: a host has
/// one view per tool).
pub fn list(registry: &Registry, caller: &Identity) -> Value {
    let snapshot = registry.snapshot();
    let resources: Vec<Value> = visible(&snapshot, caller)
        .map(|p| {
            let view = p.view.as_ref().expect("visible views have one");
            json!({
                "uri": view.uri,
                "name": format!("{}_view", p.tool.name),
                "title": view.decl.title.clone().unwrap_or_else(|| format!("{} (chart)", p.tool.title)),
                "description": view.decl.description.clone().unwrap_or_else(|| format!(
                    "Interactive chart of {}'s results, for MCP Apps clients", p.tool.name
                )),
                "mimeType": VIEW_MIME_TYPE,
                "size": view.html.len(),
                "_meta": ui_meta(p),
            })
        })
        .collect();
    json!({ "resources": resources })
}

/// The result of `resources/templates/list`: views have fixed URIs, so there are none.
pub fn templates() -> Value {
    json!({ "resourceTemplates": [] })
}

/// The result of `resources/read` for a view the caller may see: its contents are the bytes
/// the view was given at load, shared by every read.
pub fn read(
    registry: &Registry,
    caller: &Identity,
    params: Option<Value>,
) -> Result<Reply, RpcError> {
    let params = object_params(params)?;
    let uri = match params.get("uri") {
        Some(Value::String(u)) => u.as_str(),
        Some(_) => return Err(RpcError::new(INVALID_PARAMS, "`uri` must be a string")),
        None => return Err(RpcError::new(INVALID_PARAMS, "`uri` is required")),
    };
    let snapshot = registry.snapshot();
    let plugin = visible(&snapshot, caller)
        .find(|p| p.view.as_ref().is_some_and(|v| v.uri == uri))
        .ok_or_else(|| {
            RpcError::new(
                INVALID_PARAMS,
                format!("Resource not found: {}", crate::audit::bounded(uri)),
            )
            .with_data(json!({ "uri": uri }))
        })?;
    let view = plugin.view.as_ref().expect("visible views have one");
    Ok(Reply {
        value: json!({}),
        shared: vec![("contents", view.contents.clone())],
        ..Reply::default()
    })
}

/// The `_meta` a tool carries in `tools/list` when it has a view the caller may see: the
/// extension's `ui.resourceUri`, and the flat `ui/resourceUri` key that clients written
/// before the extension's 2026-01-26 release read (the extension's SDK writes both).
pub fn tool_meta(plugin: &Plugin, caller: &Identity) -> Option<Value> {
    let view = plugin.view.as_ref()?;
    caller
        .has_any(&plugin.manifest.roles)
        .then(|| json!({"ui": {"resourceUri": view.uri}, "ui/resourceUri": view.uri}))
}

/// The server's capabilities: tools, resources (the views; no subscriptions, no change
/// notifications), and the MCP Apps extension.
pub fn capabilities() -> Value {
    json!({
        "tools": {"listChanged": false},
        "resources": {"listChanged": false},
        "extensions": {UI_EXTENSION: {"mimeTypes": [VIEW_MIME_TYPE]}},
    })
}

/// Whether a 2026-07-28 request's client capabilities (in `params._meta`) declare the MCP
/// Apps extension with its HTML MIME type.
pub fn client_renders_views(params: Option<&Value>) -> bool {
    params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(super::modern::META_CLIENT_CAPABILITIES))
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(UI_EXTENSION))
        .and_then(|u| u.get("mimeTypes"))
        .and_then(Value::as_array)
        .is_some_and(|types| types.iter().any(|t| t == VIEW_MIME_TYPE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_renders_views_only_when_it_declares_the_extension_and_its_type() {
        let with =
            |caps: Value| json!({"_meta": {super::super::modern::META_CLIENT_CAPABILITIES: caps}});
        assert!(client_renders_views(Some(&with(
            json!({"extensions": {UI_EXTENSION: {"mimeTypes": [VIEW_MIME_TYPE]}}})
        ))));
        assert!(!client_renders_views(Some(&with(
            json!({"extensions": {UI_EXTENSION: {"mimeTypes": ["text/html"]}}})
        ))));
        assert!(!client_renders_views(Some(&with(json!({})))));
        assert!(!client_renders_views(None));
    }
}
