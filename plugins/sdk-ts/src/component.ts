/**
 * Inside the component: binds the `loan:reporting@1.1.0` imports as the SDK's host and exports
 * a tool as the `tool` interface. Rows arrive as one JSON text (`data.run-json`), parsed by the
 * engine's native `JSON.parse`, and the result leaves as UTF-8 bytes: the generated bindings
 * would otherwise handle every value of the rows, and every character of the result, in
 * interpreted code (docs/benchmarks.md, the `languages` profile). The entry module that `scripts/build-plugin.sh` writes calls
 * this; a plugin never imports it (its unit tests run on a FakeHost instead).
 */
import { Decimal } from "./decimal.js";
import { ToolError, forbidden, internal, invalidParams } from "./errors.js";
import { installHost, mark, type Level } from "./host.js";
import { stringify } from "./json.js";
import { rows, Timestamp, type Query, type Rows, type Value } from "./data.js";
import { FakeHost } from "./testing.js";
import type { Tool } from "./tool.js";

/* The shapes of the generated bindings (componentize-js: variants are `{ tag, val }`, options `undefined`,
   s64 `bigint`, a result's error thrown with its value as `payload`). */
type WitValue = { tag: string; val?: unknown };
type ColumnKind = "boolean" | "integer" | "decimal" | "text" | "timestamp";
export interface WitImports {
  caller: { userId(): string; roles(): string[]; canReadNames(): boolean };
  clock: { today(): string };
  log: { write(level: Level, message: string): void };
  data: { runJson(q: unknown): { columns: string[]; kinds: ColumnKind[]; rows: string; truncated: boolean; totalGroups: bigint } };
}

function toWit(v: Value): WitValue {
  if (v === null) return { tag: "null" };
  if (typeof v === "boolean") return { tag: "boolean", val: v };
  if (typeof v === "number") {
    if (!Number.isSafeInteger(v)) throw new TypeError(`${v} is not an integer: use Decimal`);
    return { tag: "integer", val: BigInt(v) };
  }
  if (typeof v === "bigint") return { tag: "integer", val: v };
  if (v instanceof Decimal) return { tag: "decimal", val: v.toString() };
  if (v instanceof Timestamp) return { tag: "timestamp", val: v.text };
  return { tag: "text", val: v };
}

/** The rows of `run-json` as SDK values: `JSON.parse` gives text, booleans, safe integers and
 * nulls as they are; only the columns of decimals, instants and integers past 2^53 (sent as
 * text) are visited. */
function fromJson(kinds: ColumnKind[], text: string): Value[][] {
  const rows = JSON.parse(text) as (Value | string)[][];
  for (let c = 0; c < kinds.length; c++) {
    const kind = kinds[c];
    if (kind === "decimal") {
      for (const row of rows) if (row[c] !== null) row[c] = Decimal.fromHost(row[c] as string);
    } else if (kind === "timestamp") {
      for (const row of rows) if (row[c] !== null) row[c] = new Timestamp(row[c] as string);
    } else if (kind === "integer") {
      for (const row of rows) if (typeof row[c] === "string") row[c] = BigInt(row[c] as string);
    }
  }
  return rows as Value[][];
}

const UTF8 = new TextEncoder();

function witQuery(q: Query): unknown {
  return {
    dataset: q.dataset,
    filter: q.filterJson,
    predicates: q.predicates.map(({ field, condition: c }) => ({
      field,
      condition:
        c.op === "any-of"
          ? { tag: "any-of", val: c.values.map(toWit) }
          : "value" in c
            ? { tag: c.op, val: toWit(c.value) }
            : { tag: c.op },
    })),
    groupBy: q.keys.map((k) =>
      k.kind === "field"
        ? { tag: "field", val: k.field }
        : k.kind === "period"
          ? { tag: "period", val: [k.field, k.unit] }
          : { tag: "mapped", val: { field: k.field, entries: k.entries, otherwise: k.otherwise } },
    ),
    distinctOn: q.distinct,
    aggregates: q.aggregates.map((a) => (a.kind === "count" ? { tag: "count" } : { tag: a.kind, val: a.field })),
    orderBy: q.orders,
    limit: q.maxRows,
  };
}

/** Binds the component's imports as the SDK's host. */
export function bindImports(w: WitImports): void {
  installHost({
    userId: () => w.caller.userId(),
    roles: () => [...w.caller.roles()],
    canReadNames: () => w.caller.canReadNames(),
    today: () => w.clock.today(),
    log: (level, message) => w.log.write(level, message),
    run(q: Query): Rows {
      let r;
      try {
        r = w.data.runJson(witQuery(q));
        mark("rows-lifted");
      } catch (e) {
        const p = (e as { payload?: WitValue }).payload;
        if (!p) throw e;
        const message = String(p.val);
        throw p.tag === "denied" ? forbidden(message) : p.tag === "invalid-query" ? invalidParams(message) : internal(message);
      }
      const decoded = { columns: r.columns, rows: fromJson(r.kinds, r.rows), truncated: r.truncated, totalGroups: Number(r.totalGroups) };
      mark("rows-decoded");
      return decoded;
    },
  });
}

/**
 * Runs the tool once on a stand-in host (the testing module's `FakeHost`) while the component
 * is being built: the engine's snapshot then holds the tool's functions compiled and its caches
 * warm, so a call's fresh instance does not redo that work. What the warm-up call answers is discarded;
 * nothing of it reaches a real call.
 */
export function warmUp(tool: Tool, args: Record<string, unknown> = {}): void {
  // One row of every column's kind, so the warm-up runs the code that reads rows too.
  const standIn = new FakeHost({
    roles: ["Admin", "User"],
    canReadNames: true,
    today: "2026-01-01",
    answer: (q: Query): Rows =>
      rows(
        [...q.keys.map((_, k) => `key${k}`), ...q.aggregates.map((_, k) => `agg${k}`)],
        [[...q.keys.map(() => "warm-up"), ...q.aggregates.map((a) => (a.kind.startsWith("count") ? 1 : Decimal.parse("1.5")))]],
      ),
  });
  tool.describe();
  // The code that reads a real call's rows and writes its result, compiled now too.
  fromJson(["text", "integer", "decimal", "timestamp", "boolean"], '[["a",1,"1.5","2026-01-01T00:00:00Z",true],[null,"9007199254740993",null,null,null]]');
  UTF8.encode("{}");
  try {
    standIn.call(tool, args);
  } catch {
    // A tool may refuse the stand-in's answers: the warm-up has still run its code.
  }
}

/** The `loan:reporting/tool` export of a tool. */
export function exportTool(tool: Tool) {
  return {
    describe() {
      const d = tool.describe();
      return { name: d.name, title: d.title, description: d.description, inputSchema: stringify(d.inputSchema), outputSchema: stringify(d.outputSchema) };
    },
    call(argumentsJson: string): Uint8Array {
      mark("entered");
      try {
        const result = UTF8.encode(tool.callJson(argumentsJson));
        mark("serialised");
        return result;
      } catch (e) {
        if (e instanceof ToolError) {
          // The bindings return a thrown value's `payload` as the result's `err`.
          throw Object.assign(new Error(e.message), { payload: e.payload });
        }
        throw e;
      }
    },
  };
}
