//! Which tool a followed reference may serve: each reference is bound to one tool, named by
//! the last segment of its repository (`oci://registry/team/report_loans:live` serves
//! `report_loans`) or given before it (`report_loans=oci://registry/team/reports:live`). An
//! artifact of another tool under that reference is refused, so whoever can push to one
//! followed repository cannot publish another tool's name through it.

use std::collections::BTreeMap;

use super::digest::Digest;
use super::name::parse_reference;

/// A reference as the host follows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Followed {
    /// `oci://…`: what is resolved, and the key of its refusals, metrics and notices.
    pub reference: String,
    /// The one tool it may serve.
    pub tool: String,
}

/// Whether `name` is a tool name: `[a-z][a-z0-9_]*` (`snake_case`, as a plugin's files, its
/// manifest and its artifact's layers are named).
pub fn is_tool_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Reads `tool=oci://…` or `oci://…/<tool>:tag`; the error says what is wrong.
pub fn bind(text: &str) -> Result<Followed, String> {
    let (tool, reference) = match text.split_once('=') {
        Some((tool, rest)) if !tool.contains('/') => (Some(tool.trim()), rest.trim()),
        _ => (None, text.trim()),
    };
    let parsed = parse_reference(reference).map_err(|e| e.to_string())?;
    if let Some(d) = parsed.digest() {
        Digest::parse(d).map_err(|why| format!("{reference}: {why}"))?;
    }
    let last = parsed.repository().rsplit('/').next().unwrap_or("");
    let tool = match tool {
        Some(t) if is_tool_name(t) => t.to_string(),
        Some(t) => return Err(format!("`{t}` is not a tool name (snake_case) in `{text}`")),
        None if is_tool_name(last) => last.to_string(),
        None => {
            return Err(format!(
                "{reference}: the repository's last segment `{last}` is not a tool name; bind the \
                 reference to its tool as `<tool>=oci://…`"
            ))
        }
    };
    Ok(Followed {
        reference: reference.to_string(),
        tool,
    })
}

/// Binds every reference, refusing two that serve one tool, or one reference twice.
pub fn bind_all(texts: &[String]) -> Result<Vec<Followed>, String> {
    let mut by_tool = BTreeMap::new();
    let mut out = Vec::new();
    for text in texts {
        let followed = bind(text)?;
        if out
            .iter()
            .any(|f: &Followed| f.reference == followed.reference)
        {
            return Err(format!("{} is named twice", followed.reference));
        }
        if let Some(other) = by_tool.insert(followed.tool.clone(), followed.reference.clone()) {
            return Err(format!(
                "{} and {other} are both bound to tool {}: a tool comes from one source",
                followed.reference, followed.tool
            ));
        }
        out.push(followed);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{bind, bind_all, Followed};

    #[test]
    fn a_reference_serves_the_tool_its_repository_or_its_binding_names() {
        // Arrange
        let followed = |r: &str, t: &str| Followed {
            reference: r.into(),
            tool: t.into(),
        };

        // Act / Assert
        assert_eq!(
            bind("oci://127.0.0.1:5000/team/report_loans:live"),
            Ok(followed(
                "oci://127.0.0.1:5000/team/report_loans:live",
                "report_loans"
            ))
        );
        assert_eq!(
            bind("report_loans=oci://r.example.com/team/reports:1"),
            Ok(followed(
                "oci://r.example.com/team/reports:1",
                "report_loans"
            ))
        );
        let why = bind("oci://r.example.com/team/reports-v2:1").unwrap_err();
        assert!(why.contains("<tool>=oci://"), "{why}");
        assert!(bind("Bad=oci://r.example.com/team/x:1").is_err());
        let pinned = format!("oci://r.example.com/team/x@sha256:{}", "A".repeat(64));
        assert!(bind(&pinned).unwrap_err().contains("64 lower-case hex"));
        let twice = bind_all(&[
            "oci://a.example.com/team/report_loans:1".into(),
            "report_loans=oci://b.example.com/other/x:1".into(),
        ]);
        assert!(twice
            .unwrap_err()
            .contains("both bound to tool report_loans"));
    }
}
