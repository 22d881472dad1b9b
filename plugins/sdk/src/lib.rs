//! Guest SDK for loanhost reporting plugins: the WIT bindings, typed argument parsing that
//! turns bad arguments into `invalid_params` errors, and the export macro. On `wasm32` it also
//! makes the instance's global allocator an arena that only grows (feature `arena`, on by
//! default): every call runs in a fresh instance (docs/plugins.md, "The allocator").
//!
//! A plugin is a type implementing [`Tool`] plus one line of export:
//!
//! ```ignore
//! use loanhost_guest::{Description, Tool, ToolError};
//! use serde_json::{json, Value};
//!
//! struct Hello;
//!
//! impl Tool for Hello {
//!     fn describe() -> Description {
//!         Description::new("hello", "Hello", "Greets the caller by user id.")
//!             .input_schema(json!({"type": "object", "properties": {}, "additionalProperties": false}))
//!             .output_schema(json!({"type": "object", "properties": {"userId": {"type": "string"}}}))
//!     }
//!     fn call(args: Value) -> Result<Value, ToolError> {
//!         let _: loanhost_guest::NoArguments = loanhost_guest::parse_arguments(args)?;
//!         Ok(json!({"userId": loanhost_guest::caller::user_id()}))
//!     }
//! }
//!
//! loanhost_guest::export_tool!(Hello);
//! ```

pub mod applications;
#[cfg(any(target_arch = "wasm32", test))]
mod arena;
pub mod args;
pub mod dates;
pub mod decimal;
pub mod schema;
#[cfg(not(target_arch = "wasm32"))]
pub mod testing;
pub mod vocab;
pub mod warehouse;

pub use args::{parse_arguments, NoArguments};
pub use decimal::Decimal;
/// The spec's shared models and reporting records (with `schemars`, for a plugin's own
/// result records).
pub use loanhost_models as models;
pub use serde_json;

/// The instance's allocator: an arena that only grows (the `arena` feature, on by default;
/// see the module `arena` for when to turn it off).
#[cfg(all(target_arch = "wasm32", feature = "arena"))]
#[global_allocator]
static ALLOCATOR: arena::ArenaAllocator = arena::ArenaAllocator::new();

/// The generated bindings of the `loan:reporting@1.2.0` world.
#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../../wit/loan-reporting@1.2.0",
        world: "reporting-tool",
        pub_export_macro: true,
        default_bindings_module: "loanhost_guest::bindings",
    });
}

/// The WIT version this SDK targets; manifests name it in `wit_version`.
pub const WIT_VERSION: &str = "1.2.0";

/// Who is calling (resolved by the host from the validated token).
pub mod caller {
    use crate::bindings::loan::reporting::caller as host;

    /// The caller's platform user id.
    pub fn user_id() -> String {
        host::user_id()
    }

    /// The caller's role codes (with the baseline `User`).
    pub fn roles() -> Vec<String> {
        host::roles()
    }

    /// Whether the caller holds any of the given role codes.
    pub fn has_any_role(wanted: &[&str]) -> bool {
        host::roles().iter().any(|r| wanted.contains(&r.as_str()))
    }

    /// Whether the caller may read officer, processor and referrer names.
    pub fn can_read_names() -> bool {
        host::can_read_names()
    }
}

/// Today's date as the host sees it.
pub mod clock {
    /// Today in UTC as `YYYY-MM-DD`.
    pub fn today() -> String {
        crate::bindings::loan::reporting::clock::today()
    }
}

/// Structured log lines, tagged by the host with the plugin name.
pub mod log {
    use crate::bindings::loan::reporting::log::{write, Level};

    /// Logs at debug level.
    pub fn debug(message: &str) {
        write(Level::Debug, message)
    }
    /// Logs at info level.
    pub fn info(message: &str) {
        write(Level::Info, message)
    }
    /// Logs at warn level.
    pub fn warn(message: &str) {
        write(Level::Warn, message)
    }
    /// Logs at error level.
    pub fn error(message: &str) {
        write(Level::Error, message)
    }
}

/// Structured queries against the host's datasets.
pub mod data {
    pub use crate::bindings::loan::reporting::data::*;
}

pub mod licensing;
pub mod listing;
pub mod people;
pub mod pricing;

pub use bindings::loan::reporting::types::ToolError;

impl ToolError {
    /// `invalid_params`: wrong type, unknown enum value, unknown property.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        ToolError::InvalidParams(message.into())
    }
    /// `bad_request`: well-formed but contradictory arguments.
    pub fn bad_request(message: impl Into<String>) -> Self {
        ToolError::BadRequest(message.into())
    }
    /// `forbidden`: the caller lacks a role.
    pub fn forbidden(message: impl Into<String>) -> Self {
        ToolError::Forbidden(message.into())
    }
    /// `internal`: anything else (never leak internals in the message).
    pub fn internal(message: impl Into<String>) -> Self {
        ToolError::Internal(message.into())
    }
}

impl From<data::DataError> for ToolError {
    fn from(e: data::DataError) -> Self {
        match e {
            data::DataError::Denied(m) => ToolError::Forbidden(m),
            data::DataError::InvalidQuery(m) => ToolError::InvalidParams(m),
            data::DataError::Unavailable(m) => ToolError::Internal(m),
        }
    }
}

/// How a tool presents itself in `tools/list`.
#[derive(Debug, Clone)]
pub struct Description {
    name: String,
    title: String,
    description: String,
    input_schema: serde_json::Value,
    output_schema: serde_json::Value,
}

impl Description {
    /// A description with empty-object schemas; set them with the builder methods.
    pub fn new(name: &str, title: &str, description: &str) -> Self {
        Self {
            name: name.into(),
            title: title.into(),
            description: description.into(),
            input_schema: serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false}),
            output_schema: serde_json::json!({"type": "object"}),
        }
    }
    /// The JSON Schema of the arguments object.
    pub fn input_schema(mut self, schema: serde_json::Value) -> Self {
        self.input_schema = schema;
        self
    }
    /// The JSON Schema of the result object.
    pub fn output_schema(mut self, schema: serde_json::Value) -> Self {
        self.output_schema = schema;
        self
    }
    /// The result object's schema, generated from the record type the tool returns (see
    /// [`result`]), so the two cannot drift apart.
    pub fn output_record<T: models::schemars::JsonSchema>(self) -> Self {
        self.output_schema(models::reporting::output_schema::<T>())
    }
}

/// A tool's result from its record type (the one named in [`Description::output_record`]).
pub fn result<T: serde::Serialize>(record: &T) -> Result<serde_json::Value, ToolError> {
    serde_json::to_value(record)
        .map_err(|e| ToolError::internal(format!("the result could not be written: {e}")))
}

/// Lets go of a value the call no longer needs without freeing it: the instance is discarded
/// when the call ends, so freeing thousands of rows piece by piece would be work for nothing.
/// On `wasm32` the value is leaked (its memory counts against the plugin's `memory_mib`
/// until the call ends); in native tests it is dropped as usual.
pub fn discard<T>(value: T) {
    #[cfg(target_arch = "wasm32")]
    core::mem::forget(value);
    #[cfg(not(target_arch = "wasm32"))]
    drop(value);
}

/// A tool's result written as JSON text straight from its record type, with no tree between
/// (what [`Tool::call_text`] returns; [`result`] builds the tree).
pub fn result_text<T: serde::Serialize>(record: &T) -> Result<String, ToolError> {
    // `to_string` writes through `io::Write` into one buffer; the `Display` impl
    // (`Value::to_string`) goes through `fmt::Write` a piece at a time, which cost the
    // cheapest tool most of its run time.
    serde_json::to_string(record)
        .map_err(|e| ToolError::internal(format!("the result could not be written: {e}")))
}

/// A reporting tool: the only thing a plugin author writes.
pub trait Tool {
    /// Name, title, description and schemas. Must not call host imports.
    fn describe() -> Description;
    /// Runs the tool on the client's arguments (`{}` when absent) and returns the result object.
    fn call(arguments: serde_json::Value) -> Result<serde_json::Value, ToolError>;
    /// What the host calls: runs the tool and writes its result object as JSON text. The
    /// default writes what [`Tool::call`] returns. A tool whose answer is a large record can
    /// write it directly with [`result_text`] (no `Value` tree between the record and the
    /// text, about half the writing); it must write a JSON object (the host refuses anything
    /// else) and should answer as `call` does, which native tests read.
    fn call_text(arguments: serde_json::Value) -> Result<String, ToolError> {
        let result = Self::call(arguments)?;
        if !result.is_object() {
            return Err(ToolError::internal(
                "the tool produced a result that is not a JSON object",
            ));
        }
        let text = result_text(&result)?;
        discard(result);
        Ok(text)
    }
}

#[doc(hidden)]
pub fn __describe<T: Tool>() -> bindings::exports::loan::reporting::tool::ToolDescription {
    let d = T::describe();
    bindings::exports::loan::reporting::tool::ToolDescription {
        name: d.name,
        title: d.title,
        description: d.description,
        input_schema: d.input_schema.to_string(),
        output_schema: d.output_schema.to_string(),
    }
}

#[doc(hidden)]
pub fn __call<T: Tool>(arguments: String) -> Result<String, ToolError> {
    let value: serde_json::Value = serde_json::from_str(&arguments)
        .map_err(|e| ToolError::invalid_params(format!("arguments are not valid JSON: {e}")))?;
    T::call_text(value)
}

/// Exports a [`Tool`] implementation as the plugin's `tool` interface.
#[macro_export]
macro_rules! export_tool {
    ($tool:ty) => {
        #[doc(hidden)]
        struct __LoanhostExport;

        impl $crate::bindings::exports::loan::reporting::tool::Guest for __LoanhostExport {
            fn describe() -> $crate::bindings::exports::loan::reporting::tool::ToolDescription {
                $crate::__describe::<$tool>()
            }
            fn call(arguments: String) -> Result<Vec<u8>, $crate::ToolError> {
                $crate::__call::<$tool>(arguments).map(String::into_bytes)
            }
        }

        $crate::bindings::export!(__LoanhostExport with_types_in $crate::bindings);
    };
}
