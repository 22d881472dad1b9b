/**
 * A tool's arguments and result described once, as a schema object: it is the JSON Schema that
 * `tools/list` shows, the parser of the client's arguments (every mistake one `invalid_params`
 * naming the argument by its path, as the Rust and Python SDKs word them), and the TypeScript type
 * of the parsed value (`Infer<typeof schema>`).
 *
 *     const Args = s.object({
 *       groupBy: s.enumOf(["None", "Status"] as const).default("None").describe("…"),
 *       filter: s.json(LOAN_FILTER_SCHEMA).optional(),
 *     });
 *     type Args = Infer<typeof Args>;
 */
import { Decimal } from "./decimal.js";
import { invalidParams } from "./errors.js";

type Json = Record<string, unknown>;

/** One schema: parses a JSON value at a path, and describes itself as JSON Schema. */
export class Schema<T> {
  constructor(
    private readonly parser: (v: unknown, path: string) => T,
    readonly json: Json,
    /** Whether a property of this schema may be absent (optional, or with a default). */
    readonly omittable = false,
    private readonly fallback?: { value: T },
  ) {}

  /** Parses `v` (the value at `path`); throws `invalid_params`. */
  parse(v: unknown, path = ""): T {
    if (v === undefined && this.fallback) return this.fallback.value;
    return this.parser(v, path);
  }

  /** The same schema with a description (shown to the model). */
  describe(text: string): Schema<T> {
    return new Schema(this.parser, { ...this.json, description: text }, this.omittable, this.fallback);
  }

  /** May be absent or `null` (parsed as `undefined`). */
  optional(): Schema<T | undefined> {
    return new Schema<T | undefined>(
      (v, p) => (v === undefined || v === null ? undefined : this.parser(v, p)),
      this.json,
      true,
    );
  }

  /** May be absent (then `value`); `null` is refused unless the schema is `.optional()`. */
  default(value: T): Schema<T> {
    const shown = value instanceof Decimal ? Number(value.toString()) : value;
    return new Schema(this.parser, { ...this.json, default: shown }, true, { value });
  }

  /** May be `null` (in a result: written as `null`, listed as `["type", "null"]`). */
  nullable(): Schema<T | null> {
    const type = this.json.type;
    const json = typeof type === "string" ? { ...this.json, type: [type, "null"] } : this.json;
    return new Schema<T | null>((v, p) => (v === null ? null : this.parser(v, p)), json, this.omittable);
  }
}

/** The TypeScript type a schema parses to. */
export type Infer<S> = S extends Schema<infer T> ? T : never;

const at = (path: string, message: string) => invalidParams(path ? `${path}: ${message}` : message);

function kind(v: unknown): string {
  if (v === null || v === undefined) return "null";
  if (typeof v === "boolean") return `boolean \`${v}\``;
  if (typeof v === "number" || typeof v === "bigint" || v instanceof Decimal) return `number ${v}`;
  if (typeof v === "string") return `string ${JSON.stringify(v)}`;
  if (Array.isArray(v)) return "a sequence";
  return "a map";
}

const wrong = (v: unknown, path: string, expected: string) =>
  at(path, `invalid type: ${kind(v)}, expected ${expected}`);

type Shape = Record<string, Schema<unknown>>;
type ObjectOf<S extends Shape> = { [K in keyof S]: Infer<S[K]> };

/** The schema builders. */
export const s = {
  string: () =>
    new Schema<string>((v, p) => (typeof v === "string" ? v : (() => { throw wrong(v, p, "a string"); })()), { type: "string" }),

  boolean: () =>
    new Schema<boolean>((v, p) => (typeof v === "boolean" ? v : (() => { throw wrong(v, p, "a boolean"); })()), { type: "boolean" }),

  /** A whole number (within JavaScript's safe integers). */
  integer: () =>
    new Schema<number>(
      (v, p) => (typeof v === "number" && Number.isSafeInteger(v) ? v : (() => { throw wrong(v, p, "an integer"); })()),
      { type: "integer" },
    ),

  /** An exact decimal: a JSON number or numeric text, parsed as `Decimal`. */
  decimal: () =>
    new Schema<Decimal>((v, p) => {
      if (v instanceof Decimal) return v;
      if (typeof v === "number" || typeof v === "bigint") return Decimal.parse(String(v));
      if (typeof v === "string") {
        const d = Decimal.tryParse(v);
        if (d) return d;
        throw at(p, `invalid value: ${kind(v)}, expected a decimal number`);
      }
      throw wrong(v, p, "a number");
    }, { type: "number" }),

  /** A calendar date as `YYYY-MM-DD` (kept as that text). */
  date: () =>
    new Schema<string>((v, p) => {
      if (typeof v !== "string") throw wrong(v, p, "a date as YYYY-MM-DD");
      const ok = /^\d{4}-\d{2}-\d{2}$/.test(v) && !Number.isNaN(Date.parse(`${v}T00:00:00Z`)) && new Date(`${v}T00:00:00Z`).toISOString().startsWith(v);
      if (!ok) throw at(p, `invalid value: ${kind(v)}, expected a date as YYYY-MM-DD`);
      return v;
    }, { type: "string", format: "date" }),

  /** A UUID (kept as lower-case text). */
  uuid: () =>
    new Schema<string>((v, p) => {
      if (typeof v === "string" && /^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$/.test(v)) {
        const h = v.replace(/-/g, "").toLowerCase();
        return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
      }
      throw typeof v === "string" ? at(p, `invalid value: ${kind(v)}, expected a UUID`) : wrong(v, p, "a UUID");
    }, { type: "string", format: "uuid" }),

  /** One of the given strings. */
  enumOf: <const V extends readonly string[]>(values: V) =>
    new Schema<V[number]>((v, p) => {
      if (typeof v !== "string") throw wrong(v, p, "a string");
      if (!values.includes(v)) {
        throw at(p, `unknown variant \`${v}\`, expected one of ${values.map((x) => `\`${x}\``).join(", ")}`);
      }
      return v as V[number];
    }, { type: "string", enum: [...values] }),

  /** A list of items. */
  array: <T>(item: Schema<T>) =>
    new Schema<T[]>((v, p) => {
      if (!Array.isArray(v)) throw wrong(v, p, "a sequence");
      return v.map((x, k) => item.parse(x, `${p}[${k}]`));
    }, { type: "array", items: item.json }),

  /** Any JSON object, passed through as parsed (e.g. the spec's `filter`, with its schema). */
  json: (schema: Json = { type: "object" }) =>
    new Schema<Record<string, unknown>>((v, p) => {
      if (v === null || typeof v !== "object" || Array.isArray(v) || v instanceof Decimal) throw wrong(v, p, "a map");
      return v as Record<string, unknown>;
    }, schema),

  /** Any JSON value at all, unchecked (describe it with `schema`). */
  any: (schema: Json = {}) => new Schema<unknown>((v) => v, schema),

  /** An object with exactly these properties (others are refused). */
  object: <S extends Shape>(shape: S, description?: string) => {
    const names = Object.keys(shape);
    const json: Json = { type: "object" };
    if (description) json.description = description;
    json.properties = Object.fromEntries(names.map((n) => [n, shape[n].json]));
    const required = names.filter((n) => !shape[n].omittable);
    if (required.length) json.required = required;
    json.additionalProperties = false;
    return new Schema<ObjectOf<S>>((v, p) => {
      if (v === undefined || (v === null && !p)) v = {};
      if (v === null || typeof v !== "object" || Array.isArray(v) || v instanceof Decimal) {
        if (!p) throw invalidParams(`arguments must be a JSON object, got ${kind(v)}`);
        throw wrong(v, p, "an object");
      }
      const obj = v as Record<string, unknown>;
      // Indexed loops: inside the component, a `for…of` loop costs a call per element.
      const given = Object.keys(obj);
      for (let i = 0; i < given.length; i++) {
        const k = given[i];
        if (!names.includes(k)) {
          throw at(p, `unknown field \`${k}\`, expected one of ${names.map((n) => `\`${n}\``).join(", ")}`);
        }
      }
      const out: Record<string, unknown> = {};
      for (let i = 0; i < names.length; i++) {
        const n = names[i];
        if (!(n in obj) && !shape[n].omittable) throw at(p, `missing field \`${n}\``);
        out[n] = shape[n].parse(obj[n], p ? `${p}.${n}` : n);
      }
      return out as ObjectOf<S>;
    }, json);
  },
};

/** A tool that takes no arguments: any property is refused. */
export const NoArguments = s.object({});
