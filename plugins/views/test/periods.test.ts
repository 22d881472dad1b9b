// The period arithmetic of the views: keys to instants and back, and gaps filled, across
// year ends and ISO week 53.
import { test } from "node:test";
import assert from "node:assert/strict";

import { periodRange, periodStart } from "../src/charts.ts";

test("period keys start where the reports say they start", () => {
  assert.equal(periodStart("2026")?.toISOString(), "2026-01-01T00:00:00.000Z");
  assert.equal(periodStart("2026-03")?.toISOString(), "2026-03-01T00:00:00.000Z");
  assert.equal(periodStart("2026-Q4")?.toISOString(), "2026-10-01T00:00:00.000Z");
  // ISO week 1 of 2026 starts on Monday 2025-12-29; 2026-W53 on Monday 2026-12-28.
  assert.equal(periodStart("2026-W01")?.toISOString(), "2025-12-29T00:00:00.000Z");
  assert.equal(periodStart("2026-W53")?.toISOString(), "2026-12-28T00:00:00.000Z");
  assert.equal(periodStart("all"), undefined);
});

test("a range fills the periods nothing was counted in", () => {
  assert.deepEqual(periodRange(["2025-12", "2025-10"]), ["2025-10", "2025-11", "2025-12"]);
  assert.deepEqual(periodRange(["2025-Q4", "2026-Q2"]), ["2025-Q4", "2026-Q1", "2026-Q2"]);
  assert.deepEqual(periodRange(["2026-W52", "2027-W02"]), ["2026-W52", "2026-W53", "2027-W01", "2027-W02"]);
  assert.deepEqual(periodRange(["2024", "2026"]), ["2024", "2025", "2026"]);
  assert.deepEqual(periodRange(["Other", "2026-01"]), ["2026-01", "Other"]);
  assert.deepEqual(periodRange([]), []);
});
