//! A plugin's view: the self-contained HTML file (`<tool>.html`) an MCP Apps client renders
//! with the tool's result. Read with the plugin, under the same signature rules as its
//! manifest, size-capped, and served with a content security policy that admits no origin
//! outside the document itself.

use std::sync::Arc;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::manifest::ViewDecl;
use crate::plugins::limits::MAX_VIEW_BYTES;

/// The MCP Apps extension's identifier (capabilities and `_meta`).
pub const UI_EXTENSION: &str = "io.modelcontextprotocol/ui";
/// The MIME type of an MCP Apps HTML view.
pub const VIEW_MIME_TYPE: &str = "text/html;profile=mcp-app";
/// The scheme and authority of every view's URI: `ui://loanhost/<tool>`.
pub const VIEW_URI_PREFIX: &str = "ui://loanhost/";

/// The policy placed first in every view's `<head>`: scripts, styles, images and fonts only
/// from the document itself (inline or `data:`), no network, no frames, no forms, no base
/// URI. A client's own policy can only narrow it further.
pub const VIEW_CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; \
style-src 'unsafe-inline'; img-src data: blob:; font-src data:; media-src data:; \
connect-src 'none'; frame-src 'none'; child-src 'none'; worker-src 'none'; \
object-src 'none'; base-uri 'none'; form-action 'none'";

/// A loaded view, ready to serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    /// `ui://loanhost/<tool>`.
    pub uri: String,
    /// What the manifest's `[view]` says of it.
    pub decl: ViewDecl,
    /// The document as served: the file with [`VIEW_CSP`] placed first in its `<head>`.
    pub html: Arc<str>,
    /// SHA-256 of the file's bytes as signed (hex).
    pub digest: String,
    /// The `contents` of its `resources/read` result as JSON text, made once at load and
    /// shared by every read (a read references these bytes; it copies nothing).
    pub contents: bytes::Bytes,
}

/// The URI of tool `name`'s view.
pub fn view_uri(name: &str) -> String {
    format!("{VIEW_URI_PREFIX}{name}")
}

/// Checks a view file's bytes (size, UTF-8, an HTML document with a `<head>`) and prepares
/// it for serving; the reason names what is wrong.
pub fn prepare(tool: &str, decl: ViewDecl, bytes: &[u8]) -> Result<View, String> {
    if bytes.len() as u64 > MAX_VIEW_BYTES {
        return Err(format!(
            "the view is {} bytes; a view may have at most {MAX_VIEW_BYTES} (bundle the chart \
             library minified, and leave out what the view does not draw)",
            bytes.len()
        ));
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|e| format!("the view is not UTF-8 text (byte {})", e.valid_up_to()))?;
    let at = head_end(text)?;
    let html = format!(
        "{}<meta http-equiv=\"Content-Security-Policy\" content=\"{VIEW_CSP}\">{}",
        &text[..at],
        &text[at..]
    );
    let uri = view_uri(tool);
    let contents = serde_json::to_vec(&serde_json::json!([{
        "uri": uri,
        "mimeType": VIEW_MIME_TYPE,
        "text": html,
        "_meta": ui_meta(&decl),
    }]))
    .map_err(|e| format!("the view cannot be written as JSON: {e}"))?;
    Ok(View {
        uri,
        decl,
        html: html.into(),
        digest: hex::encode(Sha256::digest(bytes)),
        contents: contents.into(),
    })
}

/// The `_meta.ui` of a view resource (its listing and its contents): no origin outside the
/// document (every list empty: everything is inlined), and the border preference.
pub fn ui_meta(decl: &ViewDecl) -> Value {
    let mut ui = serde_json::Map::new();
    ui.insert(
        "csp".into(),
        serde_json::json!({"connectDomains": [], "resourceDomains": [], "frameDomains": [], "baseUriDomains": []}),
    );
    if let Some(b) = decl.prefers_border {
        ui.insert("prefersBorder".into(), Value::Bool(b));
    }
    serde_json::json!({ "ui": ui })
}

fn starts_with_ignore_case(text: &str, prefix: &str) -> bool {
    text.get(..prefix.len())
        .is_some_and(|t| t.eq_ignore_ascii_case(prefix))
}

/// The byte offset just after the document's opening `<head …>` tag. The prefix before it is
/// read as HTML's tokenizer would: an optional byte-order mark and white space, the
/// `<!DOCTYPE html>`, an optional `<html …>` start tag, and nothing else but white space. Any
/// other markup before the head (a comment, a script, text, another element) is refused: a
/// browser would run or place it before the policy, or (a comment holding `<head>`) the
/// policy would land inside it.
fn head_end(text: &str) -> Result<usize, String> {
    let mut at = text.len() - text.trim_start_matches('\u{feff}').len();
    let skip_space = |at: usize| at + (text.len() - at - text[at..].trim_start().len());
    at = skip_space(at);
    if !starts_with_ignore_case(&text[at..], "<!doctype html") {
        return Err("the view is not an HTML document: it must start with <!DOCTYPE html>".into());
    }
    at = tag_end(text, at).ok_or("the view's <!DOCTYPE html> is not closed")?;
    at = skip_space(at);
    if start_tag_is(&text[at..], "html") {
        at = tag_end(text, at).ok_or("the view's <html> start tag is not closed")?;
        at = skip_space(at);
    }
    if start_tag_is(&text[at..], "head") {
        return tag_end(text, at).ok_or_else(|| "the view's <head> start tag is not closed".into());
    }
    let found: String = text[at..].chars().take(24).collect();
    if found.is_empty() {
        return Err(
            "the view has no <head> element: the host places its content security policy there"
                .into(),
        );
    }
    Err(format!(
        "the view has {found:?} before its <head>: only <!DOCTYPE html>, <html> and white space \
         may come before it, so that the host's content security policy is the first thing a \
         browser reads (move it inside <head> or <body>)"
    ))
}

/// Whether `text` starts with the start tag `<name` followed by white space, `/`, `>` or the
/// end of the text.
fn start_tag_is(text: &str, name: &str) -> bool {
    starts_with_ignore_case(text.get(1..).unwrap_or(""), name)
        && text.starts_with('<')
        && matches!(
            text.as_bytes().get(1 + name.len()),
            None | Some(b'>' | b'/' | b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
        )
}

/// The byte offset just after the `>` that closes the tag starting at `from` (a `>` inside a
/// quoted attribute value does not close it).
fn tag_end(text: &str, from: usize) -> Option<usize> {
    let mut quote = None;
    for (i, c) in text[from..].char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '>') => return Some(from + i + 1),
            _ => {}
        }
    }
    None
}

/// A page that shows `view` with one call's outcome, to open in a browser without a client
/// (`loanhost plugin run --view`): the view in a sandboxed frame, and a minimal stand-in for
/// an MCP Apps host beside it that answers the view's `ui/initialize` (with `theme`), then
/// sends the tool's input and its result (an `isError` result for a failed call) and follows
/// the view's size. Real clients do more (see the extension's specification); the view's
/// browser test uses the extension SDK's own host bridge.
pub fn preview(
    view: &View,
    tool: &str,
    arguments: &Value,
    outcome: &Result<Value, String>,
    theme: &str,
) -> String {
    let result = match outcome {
        Ok(v) => serde_json::json!({
            "content": [{"type": "text", "text": v.to_string()}],
            "structuredContent": v,
            "isError": false,
        }),
        Err(text) => {
            serde_json::json!({"content": [{"type": "text", "text": text}], "isError": true})
        }
    };
    // Inside a <script>: no `</` may close it early.
    let script_json = |v: &Value| v.to_string().replace("</", "<\\/");
    let attribute = |s: &str| s.replace('&', "&amp;").replace('"', "&quot;");
    let background = if theme == "dark" {
        "#171717"
    } else {
        "#f5f5f5"
    };
    format!(
        r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{tool}: view preview</title>
<style>body {{ margin: 0; padding: 16px; background: {background}; font-family: system-ui, sans-serif; }}
iframe {{ width: 100%; max-width: 760px; height: 300px; border: 1px solid #8884; border-radius: 8px; display: block; background: transparent; }}
p {{ color: #888; font-size: 12px; }}</style>
</head>
<body>
<p>{tool}: the plugin's view with one <code>loanhost plugin run</code> result, shown by a minimal stand-in for an MCP Apps host.</p>
<iframe sandbox="allow-scripts" title="{tool} view" srcdoc="{srcdoc}"></iframe>
<script>
const args = {args};
const result = {result};
const theme = {theme};
const frame = document.querySelector("iframe");
const send = (message) => frame.contentWindow.postMessage({{ jsonrpc: "2.0", ...message }}, "*");
window.addEventListener("message", (event) => {{
  if (event.source !== frame.contentWindow) return;
  const m = event.data || {{}};
  if (m.method === "ui/initialize") {{
    send({{ id: m.id, result: {{
      protocolVersion: m.params && m.params.protocolVersion,
      hostInfo: {{ name: "loanhost plugin run", version: "1" }},
      hostCapabilities: {{}},
      hostContext: {{ theme, displayMode: "inline", platform: "web" }},
    }} }});
  }} else if (m.method === "ui/notifications/initialized") {{
    send({{ method: "ui/notifications/tool-input", params: {{ arguments: args }} }});
    send({{ method: "ui/notifications/tool-result", params: result }});
  }} else if (m.method === "ui/notifications/size-changed") {{
    if (m.params && m.params.height) frame.style.height = m.params.height + "px";
  }} else if (m.id !== undefined && m.method) {{
    send({{ id: m.id, result: {{}} }});
  }}
}});
</script>
</body>
</html>
"#,
        srcdoc = attribute(&view.html),
        args = script_json(arguments),
        result = script_json(&result),
        theme = script_json(&Value::from(theme)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_goes_first_in_the_head() {
        let v = prepare(
            "report_loans",
            ViewDecl::default(),
            b"<!DOCTYPE html>\n<html lang=\"a>b\">\n <HEAD lang=en><script>1</script></HEAD></html>",
        )
        .unwrap();
        assert_eq!(v.uri, "ui://loanhost/report_loans");
        let at = v
            .html
            .find("<meta http-equiv=\"Content-Security-Policy\"")
            .unwrap();
        assert!(v.html[..at].ends_with("<HEAD lang=en>"), "{}", v.html);
        assert!(at < v.html.find("<script>").unwrap());
        assert_eq!(v.digest.len(), 64);
    }

    #[test]
    fn a_view_that_is_not_a_bounded_html_document_is_refused() {
        let e = |b: &[u8]| prepare("t", ViewDecl::default(), b).unwrap_err();
        assert!(e(b"<html><head></head></html>").contains("<!DOCTYPE html>"));
        assert!(e(b"<!doctype html><html>").contains("no <head>"));
        assert!(e(b"<!doctype html><html><body></body></html>").contains("before its <head>"));
        assert!(e(b"<!doctype html>\xff").contains("not UTF-8"));
        let big = format!(
            "<!doctype html><head></head>{}",
            " ".repeat(MAX_VIEW_BYTES as usize)
        );
        assert!(e(big.as_bytes()).contains("at most 2097152"));
        assert!(prepare(
            "t",
            ViewDecl::default(),
            b"\xef\xbb\xbf <!doctype html><head></head>"
        )
        .is_ok());
    }

    #[test]
    fn markup_before_the_head_is_refused_so_the_policy_comes_first() {
        let e = |b: &str| prepare("t", ViewDecl::default(), b.as_bytes()).unwrap_err();
        // A comment holding `<head>` would put the policy inside the comment.
        assert!(e("<!doctype html><!-- <head> --><head></head>").contains("before its <head>"));
        // A script before the head would run before any policy exists.
        assert!(e("<!doctype html><script>x()</script><head></head>").contains("\"<script>x()"));
        assert!(e("<!doctype html><html><header></header><head></head>").contains("<header>"));
        assert!(e("<!doctype html>text<head></head>").contains("before its <head>"));
        assert!(e("<!doctype html><html><headx></headx>").contains("before its <head>"));
        assert!(e("<!doctype html><head").contains("not closed"));
        let ok = prepare("t", ViewDecl::default(), b"<!doctype html> <html> <head>x").unwrap();
        assert!(ok.html.ends_with("<head><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:; font-src data:; media-src data:; connect-src 'none'; frame-src 'none'; child-src 'none'; worker-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'\">x"));
    }

    #[test]
    fn a_preview_carries_the_view_and_the_result_safely() {
        let v = prepare(
            "t",
            ViewDecl::default(),
            b"<!doctype html><head></head><body>\"&</body>",
        )
        .unwrap();
        let page = preview(
            &v,
            "t",
            &serde_json::json!({"q": "</script><b>"}),
            &Ok(serde_json::json!({"n": 1})),
            "dark",
        );
        assert!(page.contains(
            "srcdoc=\"<!doctype html><head><meta http-equiv=&quot;Content-Security-Policy&quot;"
        ));
        assert!(page.contains("&quot;&amp;</body>"));
        assert!(!page.contains("</script><b>"));
        assert!(page.contains(r#""structuredContent":{"n":1}"#));
        assert!(page.contains(r#"const theme = "dark";"#));
        let failed = preview(
            &v,
            "t",
            &serde_json::json!({}),
            &Err("invalid_params: x".into()),
            "light",
        );
        assert!(failed.contains(r#""isError":true"#));
    }
}
