/**
 * The TypeScript SDK for loanhost report plugins (`loan:reporting@1.2.0`).
 *
 * A plugin is one module whose default export is `defineTool({...})`; `scripts/build-plugin.sh`
 * bundles it (esbuild) and makes it a WebAssembly component with componentize-js (every WASI
 * feature disabled: the component imports nothing but the host's interfaces). Inside the sandbox
 * there is no wall clock (`today()` is the host's date), no environment, no files and no
 * network, and `Math.random` is deterministic. `console.*` goes to the host's log.
 * See docs/plugins.md.
 */
export { Decimal } from "./decimal.js";
export { ToolError, badRequest, forbidden, internal, invalidParams, type ToolErrorCode } from "./errors.js";
export { canReadNames, hasAnyRole, log, roles, today, userId } from "./host.js";
export * as data from "./data.js";
export * as licensing from "./licensing.js";
export * as listing from "./listing.js";
export { ListQuery, type OrderOption, type Page } from "./listing.js";
export * as people from "./people.js";
export * as pricing from "./pricing.js";
export { Query, Timestamp, type Rows, type Value } from "./data.js";
export { NoArguments, s, Schema, type Infer } from "./schema.js";
export { defineTool, type Tool, type ToolDefinition } from "./tool.js";
export { LOAN_FILTER_SCHEMA, LOAN_STATUSES, LOAN_TYPES, PURPOSES } from "./vocabulary.js";

/** The WIT version this SDK targets; manifests name it in `wit_version`. */
export const WIT_VERSION = "1.2.0";
