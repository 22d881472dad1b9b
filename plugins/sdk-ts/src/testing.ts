/**
 * Unit tests without a server or WebAssembly (node's own test runner): a fake host that answers
 * the plugin's imports from the test and records what the plugin asked.
 *
 *     import { FakeHost } from "@loanhost/plugin/testing";
 *     const host = new FakeHost({ answer: (q) => rows(["key0", "agg0"], [["Loan Open", 2]]) });
 *     const result = host.call(myReport, { groupBy: "Status" });
 *     assert.equal(host.queries[0].dataset, "loans");
 *
 * The fake checks nothing the real host checks (scope, grants, filters, limits): run the built
 * component with `loanhost plugin run` on fixtures for that (docs/plugins.md).
 */
import { installHost, type Host, type Level } from "./host.js";
import { parse, stringify } from "./json.js";
import type { Query, Rows } from "./data.js";
import type { Tool } from "./tool.js";

export interface FakeHostOptions {
  userId?: string;
  roles?: string[];
  canReadNames?: boolean;
  today?: string;
  /** Answers each query: a function, or a list of results handed out in order. */
  answer?: ((q: Query) => Rows) | Rows[];
}

export class FakeHost implements Host {
  /** The queries the plugin ran, in order. */
  readonly queries: Query[] = [];
  /** The log lines it wrote. */
  readonly logs: { level: Level; message: string }[] = [];

  constructor(private readonly options: FakeHostOptions = {}) {}

  userId(): string {
    return this.options.userId ?? "00000000-0000-4000-8000-000000000001";
  }
  roles(): string[] {
    return [...(this.options.roles ?? ["Agent", "User"])];
  }
  canReadNames(): boolean {
    return this.options.canReadNames ?? false;
  }
  today(): string {
    return this.options.today ?? "2026-11-22";
  }
  log(level: Level, message: string): void {
    this.logs.push({ level, message });
  }
  run(q: Query): Rows {
    this.queries.push(q);
    const a = this.options.answer;
    if (typeof a === "function") return a(q);
    if (Array.isArray(a) && a.length) return a.shift()!;
    throw new Error(`the plugin ran a query the test did not answer: ${JSON.stringify(q)}`);
  }

  /** Calls the tool with `args` as a client would send them; returns the result parsed from its
   * JSON (decimals as `Decimal`), or throws the `ToolError` the client would see. */
  call(tool: Tool, args: Record<string, unknown> = {}): any {
    const previous = installHost(this);
    try {
      return parse(tool.callJson(stringify(args)));
    } finally {
      installHost(previous);
    }
  }
}

export { rows } from "./data.js";
