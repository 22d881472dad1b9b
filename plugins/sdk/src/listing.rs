//! Pages of loan rows (`loan:reporting@1.2.0` `listing`), for a plugin whose manifest declares
//! a listing grant for `loans`: the generated types, the refusals as tool errors, and
//! [`list_objects`], which names the fields of each row once and gives rows as JSON objects.
//!
//! ```ignore
//! use loanhost_guest::listing::{self, ListQuery, OrderOption};
//! let page = listing::list_objects(&ListQuery {
//!     dataset: "loans".into(),
//!     filter: Some(r#"{"statuses": ["Underwriting"]}"#.into()),
//!     predicates: vec![],
//!     fields: vec!["id".into(), "loanNumber".into(), "loanAmount".into()],
//!     order_by: OrderOption::Updated,
//!     descending: true,
//!     page_size: 25,
//!     cursor: None,
//! })?;
//! // page.rows: [{"id": …, "loanNumber": …, "loanAmount": "350000.00"}, …]; page.next_cursor
//! ```

pub use crate::bindings::loan::reporting::listing::*;

use crate::ToolError;

impl From<ListError> for ToolError {
    fn from(e: ListError) -> Self {
        match e {
            ListError::Denied(m) => ToolError::Forbidden(m),
            ListError::InvalidQuery(m) => ToolError::InvalidParams(m),
            ListError::Unavailable(m) => ToolError::Internal(m),
            ListError::BadCursor(m) => ToolError::InvalidParams(format!("cursor: {m}")),
            ListError::StaleCursor(m) => ToolError::BadRequest(format!("cursor: {m}")),
        }
    }
}

/// A page whose rows are JSON objects keyed by field name.
#[derive(Debug, Clone, PartialEq)]
pub struct Rows {
    /// The rows, each `{field: value}` (decimals and timestamps as strings, `null` for none).
    pub rows: Vec<serde_json::Map<String, serde_json::Value>>,
    /// The cursor of the next page; `None` on the last one.
    pub next_cursor: Option<String>,
}

/// One page of `q`, its rows as objects (read through `list-page-json`: one JSON text parsed
/// by serde, not a value per field).
pub fn list_objects(q: &ListQuery) -> Result<Rows, ToolError> {
    let page = list_page_json(q)?;
    let rows: Vec<Vec<serde_json::Value>> = serde_json::from_str(&page.rows)
        .map_err(|e| ToolError::internal(format!("the host's rows are not JSON: {e}")))?;
    Ok(Rows {
        rows: rows
            .into_iter()
            .map(|row| page.columns.iter().cloned().zip(row).collect())
            .collect(),
        next_cursor: page.next_cursor,
    })
}
