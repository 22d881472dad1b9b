//! The TypeScript plugin the scaffold writes: `src/plugin.ts` counting the caller's loans by
//! status, `test/plugin.test.ts` (node's test runner, on the SDK's fake host), a `tsconfig.json`
//! that finds the SDK of the checkout, fixtures for `plugin run`, and a manifest.

use std::path::Path;

use super::{manifest, write_file, write_fixtures};

/// Writes the plugin folder `dir` for tool `name`, typed against the SDK at `sdk`.
pub(super) fn write(dir: &Path, name: &str, sdk: &Path) -> Result<(), String> {
    let sdk = sdk
        .canonicalize()
        .map_err(|e| format!("the TypeScript SDK at {}: {e}", sdk.display()))?;
    let title = name.replace('_', " ");
    write_file(
        dir.join("src/plugin.ts"),
        PLUGIN.replace("{name}", name).replace("{title}", &title),
    )?;
    write_file(
        dir.join("test/plugin.test.ts"),
        TEST.replace("{name}", name),
    )?;
    let src = sdk.join("src");
    let tsconfig = serde_json::json!({
        "compilerOptions": {
            "target": "ES2022", "module": "ES2022", "moduleResolution": "bundler", "strict": true,
            "noEmit": true, "skipLibCheck": true, "lib": ["ES2022", "DOM"], "types": [],
            "paths": {
                "@loanhost/plugin": [src.join("index.ts")],
                "@loanhost/plugin/testing": [src.join("testing.ts")],
            },
        },
        "include": ["src/**/*.ts", "test/**/*.ts", src.join("node-test.d.ts")],
    });
    write_file(
        dir.join("tsconfig.json"),
        serde_json::to_string_pretty(&tsconfig).expect("JSON") + "\n",
    )?;
    write_file(
        dir.join(format!("{name}.toml")),
        // A JavaScript runtime starts with 10 MiB of memory.
        manifest(name, super::WIT_VERSION, 64, ""),
    )?;
    write_fixtures(dir)
}

const PLUGIN: &str = r#"/**
 * `{name}`: TODO say what it answers. Counts the caller's loans by current status (only loans
 * the caller's role may see: the host applies the scope).
 *
 * Built with `scripts/build-plugin.sh <this folder>`; tested with `scripts/test-plugin.sh`. Inside
 * the sandbox there is no wall clock (use `today()`), no environment, files or network, and
 * `Math.random` is deterministic. Counts arrive as numbers, money as exact `Decimal`s.
 */
import { data, defineTool, LOAN_STATUSES, s, type Infer } from "@loanhost/plugin";

const Arguments = s.object({
  statuses: s.array(s.enumOf(LOAN_STATUSES)).default([]).describe("Only these current statuses (all when absent or empty)."),
});

const Result = s.object(
  {
    buckets: s
      .array(s.object({ status: s.string(), count: s.integer() }, "Loans at one current status."))
      .describe("One entry per current status that has loans."),
  },
  "The caller's loans by current status.",
);

export default defineTool({
  name: "{name}",
  title: "{title}",
  description: "Counts the caller's loans by current status. TODO: say when a model should use it.",
  arguments: Arguments,
  result: Result,
  run(args: Infer<typeof Arguments>): Infer<typeof Result> {
    const rows = new data.Query("loans")
      .filter(args.statuses.length ? { statuses: args.statuses } : undefined)
      .groupBy("status")
      .aggregate(data.count())
      .run();
    return { buckets: rows.rows.map(([status, n]) => ({ status: typeof status === "string" ? status : "Unknown", count: Number(n) })) };
  },
});
"#;

const TEST: &str = r#"// Unit tests of `{name}` on the SDK's fake host (no server, no WebAssembly):
// `scripts/test-plugin.sh <plugin folder>`. `loanhost plugin run … --data tests/fixtures` calls
// the built component on real fixtures, with the server's scope.
import { test } from "node:test";
import assert from "node:assert/strict";
import { FakeHost, rows } from "@loanhost/plugin/testing";
import report from "../src/plugin.js";

test("counts loans by status in the database", () => {
  // Arrange
  const host = new FakeHost({ answer: () => rows(["key0", "agg0"], [["Loan Funded", 1], ["Loan Open", 2]]) });
  // Act
  const result = host.call(report, { statuses: ["Loan Open", "Loan Funded"] });
  // Assert
  assert.deepEqual(result, { buckets: [{ status: "Loan Funded", count: 1 }, { status: "Loan Open", count: 2 }] });
  assert.equal(host.queries[0].filterJson, '{"statuses":["Loan Open","Loan Funded"]}');
});

test("unknown arguments are refused", () => {
  assert.throws(() => new FakeHost().call(report, { colour: "red" }), /unknown field `colour`/);
});
"#;
