// The TypeScript SDK's own tests: arguments parsed with precise messages, exact JSON, schemas.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Decimal, defineTool, NoArguments, Query, s, ToolError, today, userId, data } from "../src/index.js";
import { parse, stringify } from "../src/json.js";
import { FakeHost, rows } from "../src/testing.js";

const Args = s.object({
  fromDate: s.date(),
  lookback: s.integer().default(4).describe("Periods back."),
  unit: s.enumOf(["Week", "Month"] as const).default("Month"),
  amounts: s.array(s.decimal()).optional(),
});

test("arguments are parsed with their defaults", () => {
  const a = Args.parse({ fromDate: "2026-01-31", amounts: [1, "2.50"] });
  assert.equal(a.fromDate, "2026-01-31");
  assert.equal(a.lookback, 4);
  assert.equal(a.unit, "Month");
  assert.deepEqual(a.amounts?.map(String), ["1", "2.5"]);
});

const mistakes: [unknown, string][] = [
  ["x", 'arguments must be a JSON object, got string "x"'],
  [{}, "missing field `fromDate`"],
  [{ fromDate: "2026-01-31", extra: 1 }, "unknown field `extra`, expected one of `fromDate`, `lookback`, `unit`, `amounts`"],
  [{ fromDate: "2026-1-31" }, 'fromDate: invalid value: string "2026-1-31", expected a date as YYYY-MM-DD'],
  [{ fromDate: "2026-01-31", lookback: "2" }, 'lookback: invalid type: string "2", expected an integer'],
  [{ fromDate: "2026-01-31", unit: "Day" }, "unit: unknown variant `Day`, expected one of `Week`, `Month`"],
  [{ fromDate: "2026-01-31", amounts: [1, "lots"] }, 'amounts[1]: invalid value: string "lots", expected a decimal number'],
];
for (const [value, message] of mistakes) {
  test(`one invalid_params naming the argument: ${message}`, () => {
    assert.throws(() => Args.parse(value), (e: unknown) => e instanceof ToolError && e.code === "invalid_params" && e.message === message);
  });
}

test("the input schema lists defaults and refuses other properties", () => {
  assert.deepEqual(Args.json.required, ["fromDate"]);
  assert.equal(Args.json.additionalProperties, false);
  assert.deepEqual((Args.json.properties as Record<string, unknown>).lookback, { type: "integer", default: 4, description: "Periods back." });
});

test("JSON numbers are exact both ways", () => {
  const v = parse('{"a": 0.1, "b": 350000.25, "c": 7, "d": 12345678901234567890}') as Record<string, unknown>;
  assert.ok(v.a instanceof Decimal && v.a.toString() === "0.1");
  assert.equal(v.c, 7);
  assert.equal(v.d, 12345678901234567890n);
  assert.equal(stringify({ x: Decimal.parse("3.30"), y: Decimal.parse("1e3"), z: Decimal.parse("-0.0500"), n: 7n, u: undefined }), '{"x":3.3,"y":1000,"z":-0.05,"n":7}');
  assert.throws(() => stringify({ money: 0.1 }), /Decimal/);
  assert.equal(Decimal.parse("0.05").plus(Decimal.parse("0.0050")).toString(), "0.055");
});

test("the native writer keeps strings as they are, marks included, and refuses floats anywhere", () => {
  // A string that holds the writer's own marks is written exactly (by the slower writer).
  for (const mark of ["\u0000D", "\u0000P", "\u0000Z"]) {
    const tricky = { a: `${mark}1.5`, b: Decimal.parse("2.50"), c: [`"${mark}`, `x${mark}`], d: Decimal.parse("3") };
    assert.deepEqual(JSON.parse(stringify(tricky)), { a: `${mark}1.5`, b: 2.5, c: [`"${mark}`, `x${mark}`], d: 3 });
  }
  // Text that looks like a float is not one; a float in an array or a nested object is.
  assert.equal(stringify({ t: "1.5e3 and 2.5", n: [1, -2, true, null] }), '{"t":"1.5e3 and 2.5","n":[1,-2,true,null]}');
  assert.throws(() => stringify({ a: [1, { b: -2.5e-3 }] }), /the number -0\.0025 in a result/);
  assert.throws(() => stringify([3.25]), /the number 3\.25/);
  // A decimal read from the host's rows is written as the host wrote it, and computes exactly.
  const d = Decimal.fromHost("805552.27");
  assert.equal(stringify({ d }), '{"d":805552.27}');
  assert.equal(d.plus(Decimal.parse("0.73")).toString(), "805553");
  assert.equal(d.average(3).toString(), "268517.42");
  // Outside `stringify`, a decimal's JSON is its plain text.
  assert.equal(JSON.stringify({ d }), '{"d":"805552.27"}');
});

const echo = defineTool({
  name: "echo",
  title: "Echo",
  description: "Counts loans per month.",
  arguments: NoArguments,
  result: s.object({ months: s.json(), user: s.string() }),
  run() {
    console.log("asked for", today());
    const r = new Query("loans").groupBy(data.period("statusDate", "month")).aggregate(data.count()).run();
    return { months: Object.fromEntries(r.rows.map((row) => [String(row[0]), row[1]])), user: userId() };
  },
});

test("the fake host answers queries and keeps the log", () => {
  const host = new FakeHost({ userId: "u-1", today: "2026-03-01", answer: [rows(["key0", "agg0"], [["2026-02", 3]])] });
  assert.deepEqual(host.call(echo), { months: { "2026-02": 3 }, user: "u-1" });
  assert.deepEqual(host.logs, [{ level: "info", message: "asked for 2026-03-01" }]);
  assert.deepEqual(host.queries[0].keys[0], { kind: "period", field: "statusDate", unit: "month" });
  assert.throws(() => host.call(echo, { x: 1 }), /unknown field `x`/);
});
