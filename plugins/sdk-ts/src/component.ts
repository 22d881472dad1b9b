/**
 * Inside the component: binds the `loan:reporting@1.2.0` imports as the SDK's host and exports
 * a tool as the `tool` interface. Rows arrive as one JSON text (`data.run-json`,
 * `listing.list-page-json`), parsed by the
 * engine's native `JSON.parse`, and the result leaves as UTF-8 bytes: the generated bindings
 * would otherwise handle every value of the rows, and every character of the result, in
 * interpreted code (docs/benchmarks.md, the `languages` profile). The entry module that `scripts/build-plugin.sh` writes calls
 * this; a plugin never imports it (its unit tests run on a FakeHost instead).
 */
import { Decimal } from "./decimal.js";
import { ToolError, badRequest, forbidden, internal, invalidParams } from "./errors.js";
import { installHost, mark, type Level } from "./host.js";
import { stringify } from "./json.js";
import { rows, Timestamp, type Query, type Rows, type Value } from "./data.js";
import type { LicensesOf } from "./licensing.js";
import { page, type ListQuery, type Page } from "./listing.js";
import { PARTS, type Found, type Part, type PeopleQuery } from "./people.js";
import type { Priced, Scenario } from "./pricing.js";
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
  listing: { listPageJson(q: unknown): { columns: string[]; kinds: ColumnKind[]; rows: string; nextCursor?: string } };
  people: { search(q: unknown): { people: { id: string; isCaller: boolean; parts: string[]; name?: string }[]; total: bigint } };
  licensing: { userLicenses(userId: string | undefined): LicensesOf | undefined };
  pricing: {
    quote(s: unknown): { ltv: string; quotes: { product: string; rate: string; points: string; effectiveDate: string }[] };
  };
}

/** The WIT names of the parts (`people.part`), by the SDK's. */
const WIT_PARTS = ["loan-officer", "loan-assistant", "processor", "referring-agent"];

/** The tool error a client should see for a capability's refusal (the `*-error` variants share
 * these case names); anything that is not a refusal is thrown again as it is. */
function refusal(e: unknown): never {
  const p = (e as { payload?: WitValue }).payload;
  if (!p) throw e;
  const message = String(p.val);
  switch (p.tag) {
    case "denied":
    case "not-licensed":
      throw forbidden(message);
    case "invalid-query":
      throw invalidParams(message);
    case "bad-cursor":
      throw invalidParams(`cursor: ${message}`);
    case "stale-cursor":
      throw badRequest(`cursor: ${message}`);
    default:
      throw internal(message);
  }
}

/** A Decimal as the exact text the WIT takes. */
const decimalText = (d: Decimal | undefined): string | undefined => (d === undefined ? undefined : d.toString());

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
  const n = rows.length;
  for (let c = 0; c < kinds.length; c++) {
    const kind = kinds[c];
    if (kind === "decimal") {
      for (let r = 0; r < n; r++) {
        const row = rows[r];
        if (row[c] !== null) row[c] = Decimal.fromHost(row[c] as string);
      }
    } else if (kind === "timestamp") {
      for (let r = 0; r < n; r++) {
        const row = rows[r];
        if (row[c] !== null) row[c] = new Timestamp(row[c] as string);
      }
    } else if (kind === "integer") {
      for (let r = 0; r < n; r++) {
        const row = rows[r];
        if (typeof row[c] === "string") row[c] = BigInt(row[c] as string);
      }
    }
  }
  return rows as Value[][];
}

const UTF8 = new TextEncoder();

function witPredicates(predicates: Query["predicates"]): unknown[] {
  return predicates.map(({ field, condition: c }) => ({
    field,
    condition:
      c.op === "any-of"
        ? { tag: "any-of", val: c.values.map(toWit) }
        : "value" in c
          ? { tag: c.op, val: toWit(c.value) }
          : { tag: c.op },
  }));
}

function witQuery(q: Query): unknown {
  return {
    dataset: q.dataset,
    filter: q.filterJson,
    predicates: witPredicates(q.predicates),
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
        refusal(e);
      }
      const decoded = { columns: r.columns, rows: fromJson(r.kinds, r.rows), truncated: r.truncated, totalGroups: Number(r.totalGroups) };
      mark("rows-decoded");
      return decoded;
    },
    listPage(q: ListQuery): Page {
      let p;
      try {
        p = w.listing.listPageJson({
          dataset: q.dataset,
          filter: q.filterJson,
          predicates: witPredicates(q.predicates),
          fields: q.fields,
          orderBy: q.order,
          descending: q.descending,
          pageSize: q.size,
          cursor: q.cursor,
        });
      } catch (e) {
        refusal(e);
      }
      return page(p.columns, fromJson(p.kinds, p.rows), p.nextCursor);
    },
    searchPeople(q: PeopleQuery): Found {
      let f;
      try {
        f = w.people.search({ nameTokens: q.nameTokens, parts: q.parts.map((x) => WIT_PARTS[PARTS.indexOf(x)]), limit: q.limit });
      } catch (e) {
        refusal(e);
      }
      return {
        people: f.people.map((p) => ({ id: p.id, isCaller: p.isCaller, parts: p.parts.map((x) => PARTS[WIT_PARTS.indexOf(x)] as Part), name: p.name })),
        total: Number(f.total),
      };
    },
    userLicenses(userId: string | undefined): LicensesOf | undefined {
      try {
        return w.licensing.userLicenses(userId);
      } catch (e) {
        refusal(e);
      }
    },
    quote(s: Scenario): Priced {
      let r;
      try {
        r = w.pricing.quote({ ...s, loanAmount: s.loanAmount.toString(), propertyValue: decimalText(s.propertyValue), ltv: decimalText(s.ltv) });
      } catch (e) {
        refusal(e);
      }
      return {
        ltv: Decimal.fromHost(r.ltv),
        quotes: r.quotes.map((q) => ({ product: q.product, rate: Decimal.fromHost(q.rate), points: Decimal.fromHost(q.points), effectiveDate: q.effectiveDate })),
      };
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
    pages: (q: ListQuery): Page => page(q.fields, [q.fields.map(() => "warm-up")]),
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
