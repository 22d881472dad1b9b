//! The generated host bindings of the `loan:reporting` worlds this host serves, 1.0.0, 1.1.0
//! and 1.2.0 (private to `plugins`), and [`ToolPre`], a component ready to instantiate as any.
//! 1.1.0 shares 1.0.0's `types`, `caller`, `clock` and `log` (the same Rust types and host
//! code); its `data` adds `run-json` and its `tool.call` returns bytes. 1.2.0 shares those and
//! 1.1.0's `data` and `tool`, and adds `listing`, `people`, `licensing` and `pricing`.

mod v1_0 {
    wasmtime::component::bindgen!({
        path: "../wit/loan-reporting@1.0.0",
        world: "reporting-tool",
        imports: { default: async | trappable },
        exports: { default: async },
    });
}

pub(crate) mod v1_1 {
    wasmtime::component::bindgen!({
        path: "../wit/loan-reporting@1.1.0",
        world: "reporting-tool",
        imports: { default: async | trappable },
        exports: { default: async },
        with: {
            "loan:reporting/types@1.1.0": super::v1_0::loan::reporting::types,
            "loan:reporting/caller@1.1.0": super::v1_0::loan::reporting::caller,
            "loan:reporting/clock@1.1.0": super::v1_0::loan::reporting::clock,
            "loan:reporting/log@1.1.0": super::v1_0::loan::reporting::log,
        },
    });
    pub(crate) use self::loan::reporting::data;
}

pub(crate) mod v1_2 {
    wasmtime::component::bindgen!({
        path: "../wit/loan-reporting@1.2.0",
        world: "reporting-tool",
        imports: { default: async | trappable },
        exports: { default: async },
        with: {
            "loan:reporting/types@1.2.0": super::v1_0::loan::reporting::types,
            "loan:reporting/caller@1.2.0": super::v1_0::loan::reporting::caller,
            "loan:reporting/clock@1.2.0": super::v1_0::loan::reporting::clock,
            "loan:reporting/log@1.2.0": super::v1_0::loan::reporting::log,
            "loan:reporting/data@1.2.0": super::v1_1::loan::reporting::data,
        },
    });
    pub(crate) use self::loan::reporting::{licensing, listing, people, pricing};
}

pub(crate) use v1_0::exports::loan::reporting::tool::ToolDescription;
pub(crate) use v1_0::loan::reporting::{caller, clock, data, log, types};

use super::state::PluginState;
use crate::plugins::wit::WitVersion;

/// A component linked and ready to instantiate, by the version of `loan:reporting` it targets.
#[derive(Clone)]
pub(crate) enum ToolPre {
    /// `loan:reporting@1.0.0`.
    V1_0(v1_0::ReportingToolPre<PluginState>),
    /// `loan:reporting@1.1.0`.
    V1_1(v1_1::ReportingToolPre<PluginState>),
    /// `loan:reporting@1.2.0`.
    V1_2(v1_2::ReportingToolPre<PluginState>),
}

impl ToolPre {
    /// Checks that `pre`'s component exports the `tool` interface of `version`.
    pub fn new(
        version: WitVersion,
        pre: wasmtime::component::InstancePre<PluginState>,
    ) -> wasmtime::Result<ToolPre> {
        match version {
            WitVersion::V1_0 => v1_0::ReportingToolPre::new(pre).map(ToolPre::V1_0),
            WitVersion::V1_1 => v1_1::ReportingToolPre::new(pre).map(ToolPre::V1_1),
            WitVersion::V1_2 => v1_2::ReportingToolPre::new(pre).map(ToolPre::V1_2),
        }
    }

    /// The engine its component was compiled for (a store to instantiate it in must be of
    /// that engine).
    pub fn engine(&self) -> &wasmtime::Engine {
        match self {
            ToolPre::V1_0(pre) => pre.instance_pre().engine(),
            ToolPre::V1_1(pre) => pre.instance_pre().engine(),
            ToolPre::V1_2(pre) => pre.instance_pre().engine(),
        }
    }

    /// A fresh instance in `store`.
    pub async fn instantiate(
        &self,
        store: &mut wasmtime::Store<PluginState>,
    ) -> wasmtime::Result<Tool> {
        Ok(match self {
            ToolPre::V1_0(pre) => Tool::V1_0(pre.instantiate_async(store).await?),
            ToolPre::V1_1(pre) => Tool::V1_1(pre.instantiate_async(store).await?),
            ToolPre::V1_2(pre) => Tool::V1_2(pre.instantiate_async(store).await?),
        })
    }
}

/// Adds every host capability of each version to its linker.
pub(crate) fn add_to_linkers(
    v1_0: &mut wasmtime::component::Linker<PluginState>,
    v1_1: &mut wasmtime::component::Linker<PluginState>,
    v1_2: &mut wasmtime::component::Linker<PluginState>,
) -> wasmtime::Result<()> {
    v1_0::ReportingTool::add_to_linker::<_, wasmtime::component::HasSelf<_>>(v1_0, |s| s)?;
    v1_1::ReportingTool::add_to_linker::<_, wasmtime::component::HasSelf<_>>(v1_1, |s| s)?;
    v1_2::ReportingTool::add_to_linker::<_, wasmtime::component::HasSelf<_>>(v1_2, |s| s)
}

/// An instance of a plugin, by the version of `loan:reporting` it targets.
pub(crate) enum Tool {
    /// `loan:reporting@1.0.0`.
    V1_0(v1_0::ReportingTool),
    /// `loan:reporting@1.1.0`.
    V1_1(v1_1::ReportingTool),
    /// `loan:reporting@1.2.0`.
    V1_2(v1_2::ReportingTool),
}

impl Tool {
    /// How the tool describes itself.
    pub async fn describe(
        &self,
        store: &mut wasmtime::Store<PluginState>,
    ) -> wasmtime::Result<ToolDescription> {
        match self {
            Tool::V1_0(t) => t.loan_reporting_tool().call_describe(store).await,
            Tool::V1_1(t) => {
                let d = t.loan_reporting_tool().call_describe(store).await?;
                Ok(ToolDescription {
                    name: d.name,
                    title: d.title,
                    description: d.description,
                    input_schema: d.input_schema,
                    output_schema: d.output_schema,
                })
            }
            Tool::V1_2(t) => {
                let d = t.loan_reporting_tool().call_describe(store).await?;
                Ok(ToolDescription {
                    name: d.name,
                    title: d.title,
                    description: d.description,
                    input_schema: d.input_schema,
                    output_schema: d.output_schema,
                })
            }
        }
    }

    /// Runs the tool with `arguments`: the result as JSON text, or the tool's error. A 1.1.0
    /// result that is not UTF-8 is the plugin's fault (a trap).
    pub async fn call(
        &self,
        store: &mut wasmtime::Store<PluginState>,
        arguments: &str,
    ) -> wasmtime::Result<Result<String, types::ToolError>> {
        match self {
            Tool::V1_0(t) => t.loan_reporting_tool().call_call(store, arguments).await,
            Tool::V1_1(t) => utf8(t.loan_reporting_tool().call_call(store, arguments).await?),
            Tool::V1_2(t) => utf8(t.loan_reporting_tool().call_call(store, arguments).await?),
        }
    }
}

/// A result given as bytes (1.1.0 on) as text: bytes that are not UTF-8 are the plugin's
/// fault (a trap).
fn utf8(
    result: Result<Vec<u8>, types::ToolError>,
) -> wasmtime::Result<Result<String, types::ToolError>> {
    Ok(match result {
        Ok(bytes) => Ok(String::from_utf8(bytes)
            .map_err(|e| wasmtime::format_err!("the plugin's result is not UTF-8 text: {e}"))?),
        Err(e) => Err(e),
    })
}
