/**
 * Unit tests without a server or WebAssembly (node's own test runner): a fake host that answers
 * the plugin's imports from the test and records what the plugin asked.
 *
 *     import { FakeHost } from "@loanhost/plugin/testing";
 *     const host = new FakeHost({ answer: (q) => rows(["key0", "agg0"], [["Loan Open", 2]]) });
 *     const result = host.call(myReport, { groupBy: "Status" });
 *     assert.equal(host.queries[0].dataset, "loans");
 *
 * A list is answered by `pages` (`page(columns, rows, nextCursor)`), a search by `people`, a
 * licence read by `licenses`, a scenario by `prices`: each a function of what the plugin asked,
 * or a list of answers handed out in order.
 *
 * The fake checks nothing the real host checks (scope, grants, filters, limits): run the built
 * component with `loanhost plugin run` on fixtures for that (docs/plugins.md).
 */
import { installHost, type Host, type Level } from "./host.js";
import { parse, stringify } from "./json.js";
import { Timestamp, type Query, type Rows } from "./data.js";
import { Decimal } from "./decimal.js";
import type { LicensesOf } from "./licensing.js";
import type { ListQuery, Page } from "./listing.js";
import type { Found, PeopleQuery } from "./people.js";
import type { Priced, Scenario } from "./pricing.js";
import type { Tool } from "./tool.js";

/** What answers one kind of question: a function of what the plugin asked, or answers in order. */
export type Answer<Q, A> = ((asked: Q) => A) | A[];

/** What the plugin asked, as text (decimals and instants as their text). */
function describe(asked: unknown): string {
  return JSON.stringify(asked, (_, v) => (typeof v === "bigint" ? v.toString() : v instanceof Decimal || v instanceof Timestamp ? v.toString() : v));
}

function answerOf<Q, A>(answer: Answer<Q, A> | undefined, asked: Q, what: string): A {
  if (typeof answer === "function") return answer(asked);
  if (Array.isArray(answer) && answer.length) return answer.shift()!;
  throw new Error(`the plugin asked for ${what} the test did not answer: ${describe(asked)}`);
}

export interface FakeHostOptions {
  userId?: string;
  roles?: string[];
  canReadNames?: boolean;
  today?: string;
  /** Answers each query: a function, or a list of results handed out in order. */
  answer?: Answer<Query, Rows>;
  /** Answers each page of a list. */
  pages?: Answer<ListQuery, Page>;
  /** Answers each people search. */
  people?: Answer<PeopleQuery, Found>;
  /** Answers each licence read (undefined: the caller's). */
  licenses?: Answer<string | undefined, LicensesOf | undefined>;
  /** Answers each scenario priced. */
  prices?: Answer<Scenario, Priced>;
}

export class FakeHost implements Host {
  /** The queries the plugin ran, in order. */
  readonly queries: Query[] = [];
  /** The log lines it wrote. */
  readonly logs: { level: Level; message: string }[] = [];
  /** The lists it asked for a page of. */
  readonly lists: ListQuery[] = [];
  /** Its people searches. */
  readonly searches: PeopleQuery[] = [];
  /** The users whose licences it read (undefined: the caller's). */
  readonly licenseReads: (string | undefined)[] = [];
  /** The scenarios it priced. */
  readonly scenarios: Scenario[] = [];

  constructor(private readonly options: FakeHostOptions = {}) {}

  userId(): string {
    return this.options.userId ?? "00000000-0000-4000-8000-000000000001";
  }
  roles(): string[] {
    return [...(this.options.roles ?? ["Agent", "User"])];
  }
  canReadNames(): boolean {
    return this.options.canReadNames ?? false;
  }
  today(): string {
    return this.options.today ?? "2026-11-22";
  }
  log(level: Level, message: string): void {
    this.logs.push({ level, message });
  }
  run(q: Query): Rows {
    this.queries.push(q);
    return answerOf(this.options.answer, q, "a query");
  }
  listPage(q: ListQuery): Page {
    this.lists.push(q);
    return answerOf(this.options.pages, q, "a page");
  }
  searchPeople(q: PeopleQuery): Found {
    this.searches.push(q);
    return answerOf(this.options.people, q, "people");
  }
  userLicenses(userId: string | undefined): LicensesOf | undefined {
    this.licenseReads.push(userId);
    return answerOf(this.options.licenses, userId, "licences");
  }
  quote(s: Scenario): Priced {
    this.scenarios.push(s);
    return answerOf(this.options.prices, s, "prices");
  }

  /** Calls the tool with `args` as a client would send them; returns the result parsed from its
   * JSON (decimals as `Decimal`), or throws the `ToolError` the client would see. */
  call(tool: Tool, args: Record<string, unknown> = {}): any {
    const previous = installHost(this);
    try {
      return parse(tool.callJson(stringify(args)));
    } finally {
      installHost(previous);
    }
  }
}

export { rows } from "./data.js";
export { page } from "./listing.js";
