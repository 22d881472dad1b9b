// Runs TypeScript tests under node's own test runner: `node --import <sdk>/register.mjs --test`.
// Each .ts module is transpiled by esbuild (type-checking is tsc's job), and `@loanhost/plugin`
// resolves to this SDK's sources.
import { register } from "node:module";
import { pathToFileURL } from "node:url";

register("./loader.mjs", pathToFileURL(import.meta.filename ?? new URL(import.meta.url).pathname));
