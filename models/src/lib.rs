//! The service spec's shared data models ("Resources and their fields") and the reporting
//! response records, as Rust types with their JSON Schemas: one typed source for the host's
//! REST API description (`loanhost openapi`) and for the plugins' results and `outputSchema`s.
//!
//! Conventions, as the spec writes them:
//! - field names are the spec's (`_etag`, `agentNMLS`, `isTheSameAsCurrentAddress`, …);
//! - a *closed* model refuses any property it does not name (the error names the property);
//! - a *nullable* field is an `Option`: it accepts `null` or may be left out, and is written
//!   as `null` when empty, so a document round-trips unchanged;
//! - a field that is not nullable is required and refuses `null`;
//! - `uuid` is [`uuid::Uuid`], `date-time` and `date` are [`DateTime`] and [`Date`] (checked,
//!   kept as written), `int32`/`int64`/`double` are `i32`/`i64`/`f64`, money in the reporting
//!   records is an exact [`Decimal`].
//!
//! Every type implements [`schemars::JsonSchema`]; [`catalog`] lists the shared models by their
//! spec names for the API description.

/// Declares a closed model: the spec's field names in camelCase, no other property accepted.
macro_rules! closed_model {
    ($(#[$meta:meta])* pub struct $name:ident { $($body:tt)* }) => {
        #[derive(Debug, Clone, PartialEq, ::serde::Serialize, ::serde::Deserialize, ::schemars::JsonSchema)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        $(#[$meta])*
        pub struct $name { $($body)* }
    };
}

/// Declares an open model whose fields the spec does not show: any JSON object, kept as is.
macro_rules! open_model {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, PartialEq, ::serde::Serialize, ::serde::Deserialize, ::schemars::JsonSchema)]
        #[serde(transparent)]
        pub struct $name(pub ::serde_json::Map<String, ::serde_json::Value>);
    };
}

pub mod address;
pub mod application;
pub mod application_parts;
pub mod borrower;
pub mod catalog;
pub mod contacts;
pub mod errors;
mod formats;
pub mod licensing;
pub mod loan_application;
pub mod notifications;
pub mod parts;
pub mod readiness;
pub mod reporting;
pub mod rest;

pub use address::*;
pub use application::*;
pub use borrower::*;
pub use contacts::*;
pub use errors::*;
pub use formats::{decimal_text, Date, DateTime, Decimal};
pub use licensing::*;
pub use loan_application::*;
pub use notifications::*;
pub use parts::*;
pub use schemars;
pub use uuid::Uuid;

/// Finishes a generated schema for readers: a description's wrapped doc-comment lines become
/// one paragraph, and the non-standard `uint*` formats go (schemars writes `minimum: 0` beside
/// them, which says the same to every validator).
pub(crate) fn tidy(v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::Object(o) => {
            if matches!(o.get("format").and_then(Value::as_str), Some(f) if f.starts_with("uint")) {
                o.remove("format");
            }
            if let Some(Value::String(d)) = o.get_mut("description") {
                *d = d
                    .split("\n\n")
                    .map(|p| p.split('\n').collect::<Vec<_>>().join(" "))
                    .collect::<Vec<_>>()
                    .join("\n\n");
            }
            o.values_mut().for_each(tidy);
        }
        Value::Array(a) => a.iter_mut().for_each(tidy),
        _ => {}
    }
}
