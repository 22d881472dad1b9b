// The TypeScript SDK's own tests: arguments parsed with precise messages, exact JSON, schemas.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Decimal, defineTool, NoArguments, Query, s, ToolError, today, userId, data, licensing, listing, ListQuery, people, pricing, WIT_VERSION } from "../src/index.js";
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
  // A float written with an exponent and no point is one too.
  assert.throws(() => stringify({ a: [1e-7] }), /the number 1e-7 in a result/);
  assert.throws(() => stringify({ a: 2e21 }), /the number 2e\+21 in a result/);
  // A decimal read from the host's rows is written as the host wrote it, and computes exactly.
  const d = Decimal.fromHost("805552.27");
  assert.equal(stringify({ d }), '{"d":805552.27}');
  assert.equal(d.plus(Decimal.parse("0.73")).toString(), "805553");
  assert.equal(d.average(3).toString(), "268517.42");
  // Negative and whole amounts as the host writes them, read when first computed with.
  assert.equal(Decimal.fromHost("-3").plus(Decimal.parse("0.25")).toString(), "-2.75");
  assert.equal(Decimal.fromHost("-0.05").compare(Decimal.parse("-0.049")), -1);
  assert.equal(Decimal.fromHost("120").average(7).toString(), "17.14");
  assert.deepEqual([Decimal.fromHost("-12.5").units, Decimal.fromHost("-12.5").scale], [-125n, 1]);
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

// ---- the 1.2.0 capabilities on the fake host ------------------------------------------------

test("a list is built by chaining and its page gives rows by field", () => {
  // Arrange
  const host = new FakeHost({ pages: [listing.page(["id", "loanAmount"], [["a", Decimal.parse("1.50")]], "c2")] });
  const lister = defineTool({
    name: "lister",
    title: "t",
    description: "d",
    arguments: NoArguments,
    result: s.json(),
    run() {
      const p = new ListQuery()
        .select("id", "loanAmount")
        .filter({ statuses: ["Loan Open"] })
        .where("loanAmount", data.gt(Decimal.parse("100")))
        .orderBy("amount", false)
        .pageSize(10)
        .after("c1")
        .page();
      return { rows: p.rows, next: p.nextCursor };
    },
  });
  // Act
  const result = host.call(lister);
  // Assert
  const q = host.lists[0];
  assert.deepEqual([q.dataset, q.fields, q.order, q.descending, q.size, q.cursor], ["loans", ["id", "loanAmount"], "amount", false, 10, "c1"]);
  assert.equal(q.filterJson, '{"statuses":["Loan Open"]}');
  assert.equal(q.predicates[0].field, "loanAmount");
  assert.equal(result.rows[0].id, "a");
  assert.equal(result.rows[0].loanAmount.toString(), "1.5");
  assert.equal(result.next, "c2");
});

test("a list refuses an order that is not one of the spec's", () => {
  assert.deepEqual([...listing.ORDERS], ["updated", "status-date", "amount", "closing-date", "commission"]);
  assert.throws(() => new ListQuery().orderBy("borrower" as listing.OrderOption), /order "borrower": expected one of updated, status-date/);
});

test("people, licences and prices are answered and recorded by the fake", () => {
  // Arrange
  const found: people.Found = { people: [{ id: "p1", isCaller: true, parts: ["LoanOfficer"], name: "Olivia" }], total: 1 };
  const mine: licensing.LicensesOf = { userId: "u1", licenses: [{ state: "TX", stateLicenseNumber: "TX-1", expirationYear: "2027" }] };
  const priced: pricing.Priced = {
    ltv: Decimal.parse("80.00"),
    quotes: [{ product: "30Y Fixed", rate: Decimal.parse("6.125"), points: Decimal.parse("0.25"), effectiveDate: "2026-11-01" }],
  };
  const scenario: pricing.Scenario = {
    propertyState: "TX",
    loanAmount: Decimal.parse("320000"),
    propertyValue: Decimal.parse("400000"),
    creditScore: 740,
    loanType: "Conventional",
    purpose: "Purchase",
    occupancy: "PrimaryResidence",
    termMonths: 360,
    lockDays: 30,
  };
  const host = new FakeHost({ people: [found], licenses: (user) => (user === undefined ? mine : undefined), prices: [priced] });
  const asker = defineTool({
    name: "asker",
    title: "t",
    description: "d",
    arguments: NoArguments,
    result: s.json(),
    run() {
      const f = people.search({ nameTokens: ["oli"], parts: ["LoanOfficer"], limit: 5 });
      return {
        people: f.people.map((p) => p.name),
        total: f.total,
        mine: licensing.userLicenses()?.licenses[0].state,
        theirs: licensing.userLicenses("u2") ?? null,
        rate: pricing.quote(scenario).quotes[0].rate,
      };
    },
  });
  // Act
  const result = host.call(asker);
  // Assert
  assert.deepEqual({ ...result, rate: result.rate.toString() }, { people: ["Olivia"], total: 1, mine: "TX", theirs: null, rate: "6.125" });
  assert.deepEqual(host.searches, [{ nameTokens: ["oli"], parts: ["LoanOfficer"], limit: 5 }]);
  assert.deepEqual(host.licenseReads, [undefined, "u2"]);
  assert.deepEqual(host.scenarios, [scenario]);
});

test("a search refuses a part that is not one of the four", () => {
  assert.throws(() => people.search({ parts: ["Borrower" as people.Part] }), /part "Borrower": expected one of LoanOfficer, LoanAssistant/);
});

test("a capability the test did not answer fails the test by name", () => {
  const lister = defineTool({ name: "l", title: "t", description: "d", arguments: NoArguments, result: s.json(), run: () => ({ n: new ListQuery().select("id").page().rows.length }) });
  assert.throws(() => new FakeHost().call(lister), /the plugin asked for a page the test did not answer/);
});

test("the SDK targets 1.2.0", () => {
  assert.equal(WIT_VERSION, "1.2.0");
});
