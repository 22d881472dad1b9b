/**
 * The tool: a name, a title, a description, the arguments' and the result's schemas, and `run`.
 *
 *     export default defineTool({
 *       name: "hello_report",
 *       title: "Hello",
 *       description: "Greets the caller by user id.",
 *       arguments: NoArguments,
 *       result: s.object({ userId: s.uuid() }),
 *       run: () => ({ userId: userId() }),
 *     });
 *
 * The build's entry module exports it to the host as the `loan:reporting/tool` interface; the SDK
 * parses the arguments (every mistake an `invalid_params` naming the argument), writes the result
 * as JSON with exact decimals, turns tool errors into their WIT cases, and routes `console.*`
 * to the host's log.
 */
import { host, mark, type Level } from "./host.js";
import { parse, stringify } from "./json.js";
import { internal, invalidParams, ToolError } from "./errors.js";
import type { Schema } from "./schema.js";

export interface ToolDefinition<A, R> {
  /** The MCP tool name; equals the manifest's `name`. */
  name: string;
  /** A short human-readable title. */
  title: string;
  /** What the tool answers and when a model should use it. */
  description: string;
  /** The arguments' schema (its JSON Schema is the tool's `inputSchema`). */
  arguments: Schema<A>;
  /** The result's schema (the tool's `outputSchema`). */
  result: Schema<R>;
  /** Runs the tool on the parsed arguments; returns the result object. */
  run(args: A): R;
}

/** A tool, ready to export. */
export interface Tool {
  readonly definition: ToolDefinition<unknown, unknown>;
  /** Name, title, description and both schemas, as `tools/list` shows them. */
  describe(): { name: string; title: string; description: string; inputSchema: unknown; outputSchema: unknown };
  /** Arguments as JSON text in, the result as JSON text out; throws `ToolError`. */
  callJson(argumentsJson: string): string;
}

/** Defines a tool (the plugin module's default export). */
export function defineTool<A, R>(definition: ToolDefinition<A, R>): Tool {
  const d = definition as unknown as ToolDefinition<unknown, unknown>;
  return {
    definition: d,
    describe: () => ({
      name: d.name,
      title: d.title,
      description: d.description,
      inputSchema: d.arguments.json,
      outputSchema: d.result.json,
    }),
    callJson(argumentsJson: string): string {
      const restore = routeConsole();
      try {
        let value: unknown;
        try {
          value = argumentsJson.trim() ? parse(argumentsJson) : {};
        } catch (e) {
          throw invalidParams(`arguments are not valid JSON: ${(e as Error).message}`);
        }
        const args = d.arguments.parse(value);
        mark("arguments");
        const result = d.run(args);
        mark("reported");
        if (result === null || typeof result !== "object" || Array.isArray(result)) {
          throw internal("the tool produced a result that is not a JSON object");
        }
        return stringify(result);
      } catch (e) {
        if (!(e instanceof ToolError)) host().log("error", e instanceof Error ? `${e.stack ?? e}` : String(e));
        throw e;
      } finally {
        restore();
      }
    },
  };
}

/** Sends `console.log/info/debug/warn/error` to the host's log for the duration of a call. */
function routeConsole(): () => void {
  const saved = { log: console.log, info: console.info, debug: console.debug, warn: console.warn, error: console.error };
  const to = (level: Level) => (...parts: unknown[]) => host().log(level, parts.map((p) => (typeof p === "string" ? p : safe(p))).join(" "));
  console.log = to("info");
  console.info = to("info");
  console.debug = to("debug");
  console.warn = to("warn");
  console.error = to("error");
  return () => Object.assign(console, saved);
}

function safe(v: unknown): string {
  try {
    return stringify(v);
  } catch {
    return String(v);
  }
}
