/**
 * Pages of loan rows (`loan:reporting@1.2.0` `listing`), for a plugin whose manifest declares a
 * listing grant for `loans` (`[datasets.loans] fields = [...] listing = true`). The host checks
 * every field against the grant and the caller's roles, ANDs in the caller's scope, orders by
 * one of the spec's `orderByOptions`, caps a page at 100 rows and seals the cursor it issues to
 * the caller, the plugin, the list and the snapshot.
 *
 *     const page = new ListQuery("loans")
 *       .select("id", "loanNumber", "status", "loanAmount")
 *       .filter(args.filter)
 *       .orderBy("updated", true)
 *       .pageSize(25)
 *       .after(args.cursor)
 *       .page();
 *     for (const row of page.rows) row.loanAmount; // a Decimal
 *     page.nextCursor; // undefined on the last page
 *
 * A cursor another caller sends back, or one sent for another list, is refused as
 * `invalid_params: cursor: …`; one cut from a snapshot an import has since replaced as
 * `bad_request: cursor: …` (list from the first page).
 */
import { host } from "./host.js";
import { stringify } from "./json.js";
import type { Condition, Value } from "./data.js";

/** The orders a list may take (the spec's `orderByOptions`). Nulls come last either way; the
 * loan breaks ties. */
export const ORDERS = ["updated", "status-date", "amount", "closing-date", "commission"] as const;
export type OrderOption = (typeof ORDERS)[number];

/** Rows a page at most. */
export const MAX_PAGE_SIZE = 100;

/** A list of `dataset` (`loans` or `loan-applications`); each method returns the list, so calls chain. */
export class ListQuery {
  fields: string[] = [];
  filterJson?: string;
  predicates: { field: string; condition: Condition }[] = [];
  order: OrderOption = "updated";
  descending = true;
  size = 50;
  cursor?: string;

  constructor(readonly dataset: string = "loans") {}

  /** The fields of each row, in order (1 to 32, each granted by the manifest). */
  select(...fields: string[]): this {
    this.fields.push(...fields);
    return this;
  }
  /** The spec's `filter` object as the client sent it (the host translates it as for a query:
   * it can only narrow the caller's scope); undefined or null: none. */
  filter(spec: Record<string, unknown> | string | null | undefined): this {
    this.filterJson = spec == null ? undefined : typeof spec === "string" ? spec : stringify(spec);
    return this;
  }
  /** A predicate, AND-ed with the others, the filter and the caller's scope. */
  where(fieldName: string, condition: Condition): this {
    this.predicates.push({ field: fieldName, condition });
    return this;
  }
  /** One of `ORDERS` (its field must be granted too); highest first unless told. */
  orderBy(order: OrderOption, descending = true): this {
    if (!ORDERS.includes(order)) throw new TypeError(`order "${order}": expected one of ${ORDERS.join(", ")}`);
    this.order = order;
    this.descending = descending;
    return this;
  }
  /** Rows of a page, 1 to `MAX_PAGE_SIZE` (the host refuses any other). */
  pageSize(n: number): this {
    this.size = n;
    return this;
  }
  /** Continue where the page whose `nextCursor` this is ended; undefined or null: the first page. */
  after(cursor: string | null | undefined): this {
    this.cursor = cursor ?? undefined;
    return this;
  }
  /** One page; throws the `ToolError` a client should see when the host refuses it. */
  page(): Page {
    return host().listPage(this);
  }
}

/** One page of a list. */
export interface Page {
  columns: string[];
  /** Each row keyed by field (`string`, `number`, `boolean`, `Decimal`, `Timestamp`, `null`). */
  rows: Record<string, Value>[];
  /** The cursor of the next page; undefined on the last one. */
  nextCursor?: string;
}

/** A page from rows of values, one per column (what a test's fake host answers). */
export function page(columns: string[], data: Value[][], nextCursor?: string): Page {
  return { columns, rows: data.map((row) => Object.fromEntries(columns.map((c, i) => [c, row[i]]))), nextCursor };
}
