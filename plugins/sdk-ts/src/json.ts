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
 * (money is never a float); `NaN` and the infinities are written as `null`, as `JSON.stringify`
 * writes them.
 *
 * Written by the engine's native `JSON.stringify`: each Decimal is handed to it as a marked
 * string (`"\u0000D350000\u0000P25\u0000Z"`) by its `toJSON`, and the quotes and marks are then
 * taken off; the text is checked for a float by a regular expression (two when a string of the
 * result holds a digit before `.` or `e`). Only when a string of the result itself holds one of
 * those marks, or the result holds a bigint (which `JSON.stringify` refuses), is the slower
 * writer below used. (Inside the component, JavaScript is interpreted: a function of ours called for every
 * value costs more than the rest of a report.) */
export function stringify(value: unknown): string {
  marked = 0;
  pointed = 0;
  let text: string | undefined;
  try {
    marking = true;
    text = JSON.stringify(value);
  } catch {
    // A bigint (which has no `toJSON`), or a cycle: the writer below says which.
    text = undefined;
  } finally {
    marking = false;
  }
  const n = marked;
  // Each mark as many times as `markedNumber` wrote it, or a string of the result holds one too.
  const opened = text?.split(OPEN);
  const closed = opened?.length === n + 1 ? opened.join("").split(CLOSE) : undefined;
  const points = closed?.length === n + 1 ? closed.join("").split(POINT) : undefined;
  if (text === undefined || points?.length !== pointed + 1) {
    const out: string[] = [];
    write(value, out);
    return out.join("");
  }
  // Marked numbers hold no `.` (see `markedNumber`): a digit before `.`, `e` or `E` is a float,
  // or inside a string, which only then are taken out to look again. `JSON.stringify` writes
  // a float with a `.`, `e+` or `e-`: a text with none of them (found by the engine's own
  // string search, not its regular expression interpreter) holds none.
  const suspect = text.includes(".") || text.includes("e+") || text.includes("e-");
  const stripped = suspect && FLOAT.test(text) ? text.replace(STRINGS, '""') : "";
  const at = stripped.search(FLOAT);
  if (at !== -1) {
    let start = at;
    let end = at + 1;
    while (start > 0 && "-0123456789".includes(stripped[start - 1])) start--;
    while (end < stripped.length && "0123456789.eE+-".includes(stripped[end])) end++;
    throw new TypeError(`the number ${stripped.slice(start, end)} in a result: use Decimal for exact numbers`);
  }
  return n ? points.join(".") : text;
}

/** How a marked number starts, has its decimal point, and ends as `JSON.stringify` writes it
 * (no `e` or `E` after a digit: the float check looks for those). */
const OPEN = '"\\u0000D';
const POINT = "\\u0000P";
const CLOSE = '\\u0000Z"';
/** Every JSON string (to look for floats outside them); a digit followed by a fraction or an
 * exponent, which outside strings only a float has. */
const STRINGS = /"(?:[^"\\]|\\.)*"/g;
const FLOAT = /\d[.eE]/;

let marking = false;
let marked = 0;
let pointed = 0;

/** The text `JSON.stringify` writes for an exact number while `stringify` runs; elsewhere (a
 * plugin's own `JSON.stringify`), its plain text. */
function markedNumber(this: { toString(): string }): string {
  const plain = this.toString();
  if (!marking) return plain;
  // Only Decimal has this toJSON (a bigint has none: `stringify` then uses its writer).
  marked++;
  const point = plain.indexOf(".");
  if (point < 0) return `\u0000D${plain}\u0000Z`;
  pointed++;
  return `\u0000D${plain.slice(0, point)}\u0000P${plain.slice(point + 1)}\u0000Z`;
}
(Decimal.prototype as unknown as { toJSON: () => string }).toJSON = markedNumber;

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
