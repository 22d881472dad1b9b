// Unit tests of the TypeScript report_loans against the SDK's fake host (no server, no Wasm):
// node's own test runner (scripts/test-plugin.sh runs them).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Decimal, ToolError } from "@loanhost/plugin";
import { FakeHost, rows } from "@loanhost/plugin/testing";
import reportLoans from "../src/plugin.js";

const OFFICER = "8f0a3b6e-9a63-4f6e-9d55-0c1e0f4c2a11";
const d = (t: string) => Decimal.parse(t);

test("counts and measures by status in the database", () => {
  // Arrange: the host answers the grouped query.
  const host = new FakeHost({
    answer: () =>
      rows(["key0", "agg0", "agg1", "agg2", "agg3", "agg4"], [
        ["Loan Open", 2, 2, d("300000.5"), d("100000"), d("200000.5")],
        ["Loan Funded", 1, 0, null, null, null],
      ]),
  });
  // Act
  const result = host.call(reportLoans, { groupBy: "Status", metric: "Average" });
  // Assert
  const q = host.queries[0];
  assert.equal(q.dataset, "loans");
  assert.deepEqual(q.keys, [{ kind: "field", field: "status" }]);
  assert.deepEqual(q.aggregates.map((a) => a.kind), ["count", "count-of", "sum", "min", "max"]);
  assert.equal(result.totalCount, 3);
  const [open, funded] = result.buckets;
  assert.equal(open.average.toString(), "150000.25");
  assert.equal(open.value.toString(), "150000.25");
  assert.equal(open.sum.toString(), "300000.5");
  assert.deepEqual(funded, { key: "Loan Funded", keyId: null, count: 1, value: null });
});

test("officers without the name right are keyed by id", () => {
  const host = new FakeHost({
    answer: () => rows(["key0", "agg0", "agg1", "agg2", "agg3", "agg4"], [[OFFICER, 3, 3, d("3"), d("1"), d("1")], [null, 1, 0, null, null, null]]),
  });
  const result = host.call(reportLoans, { groupBy: "LoanOfficer", metric: "Sum" });
  assert.deepEqual(host.queries[0].keys, [{ kind: "field", field: "loanOfficerId" }]);
  assert.deepEqual(
    result.buckets.map((b: { key: string; keyId: string | null; value: Decimal | null }) => [b.key, b.keyId, b.value?.toString() ?? null]),
    [[OFFICER, OFFICER, "3"], ["Unassigned", null, null]],
  );
});

test("averages round half away from zero to cents", () => {
  assert.equal(d("0.05").average(2).toString(), "0.03");
  assert.equal(d("-0.05").average(2).toString(), "-0.03");
  assert.equal(d("10").average(3).toString(), "3.33");
});

test("unknown values are invalid_params naming the argument", () => {
  assert.throws(
    () => new FakeHost().call(reportLoans, { groupBy: "Weekday" }),
    (e: unknown) => e instanceof ToolError && e.code === "invalid_params" && e.message.startsWith("groupBy: unknown variant `Weekday`"),
  );
  assert.throws(() => new FakeHost().call(reportLoans, { filter: "open loans" }), /filter must be an object/);
});
