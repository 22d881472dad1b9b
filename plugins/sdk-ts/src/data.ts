/**
 * Structured, aggregate queries of the host's datasets (`loan:reporting/data`). A query is data,
 * never SQL: the host compiles it, adds the caller's scope, and refuses datasets and fields the
 * manifest does not grant.
 *
 *     const rows = new Query("loans")
 *       .filter(args.filter)
 *       .groupBy(field("status"))
 *       .aggregate(count(), sumOf("loanAmount"))
 *       .orderBy(1, true)
 *       .run();
 *
 * Values are `null`, `boolean`, `number` (counts; `bigint` past 2^53), `Decimal` (exact money),
 * `string` (text), `Timestamp` (an instant as RFC 3339 text).
 */
import { Decimal } from "./decimal.js";
import { host } from "./host.js";
import { stringify } from "./json.js";

/** A UTC instant as RFC 3339 text: a `timestamp` value. */
export class Timestamp {
  constructor(readonly text: string) {}
  static of(d: Date): Timestamp {
    return new Timestamp(d.toISOString().replace(/\.\d{3}Z$/, "Z"));
  }
  toString(): string {
    return this.text;
  }
}

export type Value = null | boolean | number | bigint | Decimal | string | Timestamp;
export type PeriodUnit = "week" | "month" | "quarter" | "year";

export type Key =
  | { kind: "field"; field: string }
  | { kind: "period"; field: string; unit: PeriodUnit }
  | { kind: "mapped"; field: string; entries: [string, string][]; otherwise?: string };

/** Group by a field's value. */
export const field = (name: string): Key => ({ kind: "field", field: name });
/** Group by the period (week, month, quarter, year) a date-time field falls in. */
export const period = (name: string, unit: PeriodUnit): Key => ({ kind: "period", field: name, unit });
/** Group by a label of a field's value (values not listed: `otherwise`, or the value itself). */
export const mapped = (name: string, entries: Record<string, string> | [string, string][], otherwise?: string): Key => ({
  kind: "mapped",
  field: name,
  entries: Array.isArray(entries) ? entries : Object.entries(entries),
  otherwise,
});

export type Aggregate = { kind: "count" } | { kind: "count-of" | "count-distinct" | "sum" | "min" | "max"; field: string };
/** Number of rows. */
export const count = (): Aggregate => ({ kind: "count" });
/** Number of rows where the field is not null. */
export const countOf = (f: string): Aggregate => ({ kind: "count-of", field: f });
/** Number of distinct non-null values. */
export const countDistinct = (f: string): Aggregate => ({ kind: "count-distinct", field: f });
/** Exact sum (null when no row has a value). */
export const sumOf = (f: string): Aggregate => ({ kind: "sum", field: f });
/** Smallest value. */
export const minOf = (f: string): Aggregate => ({ kind: "min", field: f });
/** Largest value. */
export const maxOf = (f: string): Aggregate => ({ kind: "max", field: f });

export type Condition =
  | { op: "eq" | "ne" | "lt" | "le" | "gt" | "ge"; value: Value }
  | { op: "any-of"; values: Value[] }
  | { op: "is-null" | "is-not-null" };
export const eq = (value: Value): Condition => ({ op: "eq", value });
export const ne = (value: Value): Condition => ({ op: "ne", value });
export const lt = (value: Value): Condition => ({ op: "lt", value });
export const le = (value: Value): Condition => ({ op: "le", value });
export const gt = (value: Value): Condition => ({ op: "gt", value });
export const ge = (value: Value): Condition => ({ op: "ge", value });
/** The field equals one of the values (an empty list matches nothing). */
export const anyOf = (values: Value[]): Condition => ({ op: "any-of", values });
export const isNull = (): Condition => ({ op: "is-null" });
export const isNotNull = (): Condition => ({ op: "is-not-null" });

/** A structured, aggregate query; each method returns the query, so calls chain. */
export class Query {
  filterJson?: string;
  predicates: { field: string; condition: Condition }[] = [];
  keys: Key[] = [];
  distinct?: string;
  aggregates: Aggregate[] = [];
  orders: { column: number; descending: boolean }[] = [];
  maxRows?: number;

  constructor(readonly dataset: string) {}

  /** The spec's `filter` object as the client sent it (the host validates it and intersects
   * `loanOfficerIds` with the caller's scope); undefined or null: none. */
  filter(spec: Record<string, unknown> | string | null | undefined): this {
    this.filterJson = spec == null ? undefined : typeof spec === "string" ? spec : stringify(spec);
    return this;
  }
  /** A predicate, AND-ed with the others, the filter and the caller's scope. */
  where(fieldName: string, condition: Condition): this {
    this.predicates.push({ field: fieldName, condition });
    return this;
  }
  /** Group-by keys (a string is a field); none gives one row over all rows. */
  groupBy(...keys: (Key | string)[]): this {
    this.keys.push(...keys.map((k) => (typeof k === "string" ? field(k) : k)));
    return this;
  }
  /** Rows made distinct on (keys, this field) before aggregating. */
  distinctOn(fieldName: string): this {
    this.distinct = fieldName;
    return this;
  }
  /** Aggregates, in output order after the keys. */
  aggregate(...aggregates: Aggregate[]): this {
    this.aggregates.push(...aggregates);
    return this;
  }
  /** Sort by an output column (keys first, then aggregates); by default the keys ascending. */
  orderBy(column: number, descending = false): this {
    this.orders.push({ column, descending });
    return this;
  }
  /** At most `n` rows (the host applies its own cap too). */
  limit(n: number | undefined): this {
    this.maxRows = n;
    return this;
  }
  /** Runs the query; throws the `ToolError` a client should see when the host refuses it. */
  run(): Rows {
    return host().run(this);
  }
}

/** The rows of a query result. */
export interface Rows {
  columns: string[];
  rows: Value[][];
  /** True when rows were cut by the limit or the host's cap. */
  truncated: boolean;
  /** Groups before the limit. */
  totalGroups: number;
}

/** Rows for a test's fake host (`truncated` false, `totalGroups` the row count by default). */
export function rows(columns: string[], data: Value[][], truncated = false, totalGroups = data.length): Rows {
  return { columns, rows: data, truncated, totalGroups };
}
