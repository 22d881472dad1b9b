/**
 * JSON in and out with exact numbers: numbers with a fraction or an exponent are read as
 * `Decimal`, integers as `number` (or `bigint` past 2^53); a `Decimal` or a `bigint` is written
 * as the plain number it is. `undefined` properties are left out (an optional field not set).
 */
import { Decimal } from "./decimal.js";

/** Parses JSON text, numbers exactly (see the module's note). */
export function parse(text: string): unknown {
  let i = 0;
  const fail = (what: string): never => {
    throw new SyntaxError(`${what} at position ${i}`);
  };
  const ws = () => {
    while (i < text.length && " \t\n\r".includes(text[i])) i++;
  };
  const value = (): unknown => {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      const out: Record<string, unknown> = {};
      ws();
      if (text[i] === "}") return i++, out;
      for (;;) {
        ws();
        if (text[i] !== '"') fail("expected a property name");
        const k = str();
        ws();
        if (text[i++] !== ":") fail("expected ':'");
        out[k] = value();
        ws();
        if (text[i] === ",") { i++; continue; }
        if (text[i] === "}") return i++, out;
        fail("expected ',' or '}'");
      }
    }
    if (c === "[") {
      i++;
      const out: unknown[] = [];
      ws();
      if (text[i] === "]") return i++, out;
      for (;;) {
        out.push(value());
        ws();
        if (text[i] === ",") { i++; continue; }
        if (text[i] === "]") return i++, out;
        fail("expected ',' or ']'");
      }
    }
    if (c === '"') return str();
    const m = /^-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (m) {
      i += m[0].length;
      if (m[1] || m[2]) return Decimal.parse(m[0]);
      const n = Number(m[0]);
      return Number.isSafeInteger(n) ? n : BigInt(m[0]);
    }
    for (const [word, v] of [["true", true], ["false", false], ["null", null]] as const) {
      if (text.startsWith(word, i)) return (i += word.length), v;
    }
    return fail("unexpected input");
  };
  const str = (): string => {
    const m = /^"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/.exec(text.slice(i));
    if (!m) fail("bad string");
    i += m![0].length;
    return JSON.parse(m![0]) as string;
  };
  const v = value();
  ws();
  if (i !== text.length) fail("unexpected data after the value");
  return v;
}

/** Writes a value as JSON: Decimal and bigint as exact numbers; a non-integer `number` is refused
 * (money is never a float). */
export function stringify(value: unknown): string {
  const out: string[] = [];
  write(value, out);
  return out.join("");
}

function write(v: unknown, out: string[]): void {
  if (v === null) out.push("null");
  else if (v instanceof Decimal) out.push(v.toString());
  else if (typeof v === "bigint") out.push(v.toString());
  else if (typeof v === "number") {
    if (!Number.isInteger(v)) throw new TypeError(`the number ${v} in a result: use Decimal for exact numbers`);
    out.push(String(v));
  } else if (typeof v === "boolean") out.push(v ? "true" : "false");
  else if (typeof v === "string") out.push(JSON.stringify(v));
  else if (Array.isArray(v)) {
    out.push("[");
    v.forEach((item, k) => {
      if (k) out.push(",");
      write(item === undefined ? null : item, out);
    });
    out.push("]");
  } else if (typeof v === "object") {
    out.push("{");
    let first = true;
    for (const [k, item] of Object.entries(v as Record<string, unknown>)) {
      if (item === undefined) continue;
      if (!first) out.push(",");
      first = false;
      out.push(JSON.stringify(k), ":");
      write(item, out);
    }
    out.push("}");
  } else throw new TypeError(`cannot write a ${typeof v} as JSON`);
}
