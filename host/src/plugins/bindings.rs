//! The generated host bindings of the `loan:reporting@1.0.0` world (private to `plugins`).

mod generated {
    wasmtime::component::bindgen!({
        path: "../wit/loan-reporting@1.0.0",
        world: "reporting-tool",
        imports: { default: async | trappable },
        exports: { default: async },
    });
}

pub(crate) use generated::exports::loan::reporting::tool::ToolDescription;
pub(crate) use generated::loan::reporting::{caller, clock, data, log, types};
pub(crate) use generated::{ReportingTool, ReportingToolPre};
