// Unit tests of the TypeScript query_loans against the SDK's fake host (no server, no Wasm):
// node's own test runner (scripts/test-plugin.sh runs them).
import { test } from "node:test";
import assert from "node:assert/strict";
import { data, Decimal, ToolError, type ListQuery } from "@loanhost/plugin";
import { FakeHost, page, rows } from "@loanhost/plugin/testing";
import queryLoans, { FIELDS } from "../src/plugin.js";

const LOAN = "6a1f2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";

function listed(q: ListQuery) {
  const row = q.fields.map((f) =>
    f === "id" ? LOAN : f === "loanAmount" ? Decimal.fromHost("350000.00") : f === "updated" ? new data.Timestamp("2026-03-01T12:00:00Z") : null,
  );
  return page(q.fields, [row], "next-page");
}

test("lists a page and counts every loan of the filter", () => {
  // Arrange
  const host = new FakeHost({ pages: listed, answer: [rows(["agg0"], [[42]])] });
  // Act
  const result = host.call(queryLoans, { filter: { statuses: ["Loan Open"] }, orderBy: "closingDate", descending: false, pageSize: 10 });
  // Assert
  const q = host.lists[0];
  assert.deepEqual([q.dataset, q.order, q.descending, q.size, q.cursor], ["loans", "closing-date", false, 10, undefined]);
  assert.equal(q.filterJson, '{"statuses":["Loan Open"]}');
  assert.deepEqual(q.fields, FIELDS, "no names for a caller who may not read them");
  assert.equal(host.queries[0].filterJson, q.filterJson);
  assert.equal(result.totalCount, 42);
  assert.equal(result.nextCursor, "next-page");
  assert.equal(result.loans[0].loanAmount, "350000.00");
  assert.equal(result.loans[0].updated, "2026-03-01T12:00:00Z");
});

test("names only for callers who may read them, borrowers only when asked", () => {
  // Arrange
  const host = new FakeHost({ canReadNames: true, pages: listed, answer: () => rows(["agg0"], [[1]]) });
  // Act
  host.call(queryLoans, { cursor: "abc", includeBorrowerName: true });
  // Assert
  const q = host.lists[0];
  assert.deepEqual(q.fields.slice(-5), ["loanOfficerName", "processorName", "referringAgentName", "borrowerFirstName", "borrowerLastName"]);
  assert.deepEqual([q.order, q.descending, q.size, q.cursor], ["updated", true, 25, "abc"]);
});

for (const [args, message] of [
  [{ filter: [1] }, "filter must be an object"],
  [{ pageSize: 0 }, "pageSize: 0 is not between 1 and 100"],
  [{ pageSize: 101 }, "pageSize: 101 is not between 1 and 100"],
  [{ orderBy: "borrower" }, "orderBy: unknown variant `borrower`"],
] as [Record<string, unknown>, string][]) {
  test(`refuses ${JSON.stringify(args)} before asking the host`, () => {
    const host = new FakeHost();
    assert.throws(() => host.call(queryLoans, args), (e: unknown) => e instanceof ToolError && e.code === "invalid_params" && e.message.includes(message));
    assert.equal(host.lists.length, 0);
  });
}
