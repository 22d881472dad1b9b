/**
 * The people on the loans of the caller's scope (`loan:reporting@1.2.0` `people`), for a plugin
 * whose manifest declares a listing grant for `people` (`[datasets.people] fields = ["id",
 * "isCaller", "parts"] listing = true`, and `"name"` to read names). The host resolves the
 * scope on every call; names only for callers who may read them; never an email.
 *
 *     const found = search({ nameTokens: ["olivia"], parts: ["LoanOfficer"], limit: 10 });
 *     for (const p of found.people) p.id, p.isCaller, p.parts, p.name; // the caller first
 *     found.total; // how many matched, before the limit
 *
 * A search by name from a caller who may not read names is refused as `forbidden: …`.
 */
import { host } from "./host.js";

/** The parts a person plays on a loan (the host lists a person's in this order). */
export const PARTS = ["LoanOfficer", "LoanAssistant", "Processor", "ReferringAgent"] as const;
export type Part = (typeof PARTS)[number];

/** A search: every token must appear in the name (case-insensitively); only people playing one
 * of `parts` (empty: anyone, the caller too); at most `limit` (1 to 100). */
export interface PeopleQuery {
  nameTokens: string[];
  parts: Part[];
  limit: number;
}

/** One person: their platform user id (what the filter's `loanOfficerIds` and `processorId`
 * take), whether they are the caller, the parts they play, their name when it may be read. */
export interface Person {
  id: string;
  isCaller: boolean;
  parts: Part[];
  name?: string;
}

/** A search's answer: at most the limit's people, and how many matched. */
export interface Found {
  people: Person[];
  total: number;
}

/** Searches the people of the caller's scope. A part not in `PARTS` is a `TypeError`. */
export function search(q: Partial<PeopleQuery> = {}): Found {
  const query: PeopleQuery = { nameTokens: q.nameTokens ?? [], parts: q.parts ?? [], limit: q.limit ?? 20 };
  for (const p of query.parts) {
    if (!PARTS.includes(p)) throw new TypeError(`part "${p}": expected one of ${PARTS.join(", ")}`);
  }
  return host().searchPeople(query);
}
