/**
 * The host as a plugin sees it: who is calling, today's date, log lines, data queries, and the
 * 1.2.0 capabilities (lists of loans, people, licences, prices). Inside the component these are
 * the imports of `loan:reporting@1.2.0` (bound by the entry module the build writes); in a unit
 * test, a `FakeHost` from `@loanhost/plugin/testing`.
 */
import type { Query, Rows } from "./data.js";
import type { LicensesOf } from "./licensing.js";
import type { ListQuery, Page } from "./listing.js";
import type { Found, PeopleQuery } from "./people.js";
import type { Priced, Scenario } from "./pricing.js";

export type Level = "debug" | "info" | "warn" | "error";

/** What the SDK asks of the host (the WIT imports). */
export interface Host {
  userId(): string;
  roles(): string[];
  canReadNames(): boolean;
  today(): string;
  log(level: Level, message: string): void;
  run(query: Query): Rows;
  listPage(query: ListQuery): Page;
  searchPeople(query: PeopleQuery): Found;
  userLicenses(userId: string | undefined): LicensesOf | undefined;
  quote(scenario: Scenario): Priced;
}

let current: Host | undefined;

/** Installs `host` (undefined: none); returns the one it replaces. */
export function installHost(host: Host | undefined): Host | undefined {
  const previous = current;
  current = host;
  return previous;
}

/* Set by `LOANHOST_SDK_PROFILE=1 scripts/build-plugin.sh` (esbuild's --define): a build whose
   stages are marked for the host's profile. */
declare const LOANHOST_PROFILE: boolean;
const PROFILE = typeof LOANHOST_PROFILE !== "undefined" && LOANHOST_PROFILE;

/**
 * Marks that a call reached `stage`, in a profile build only (a log line the profiling host of
 * `make bench`'s `languages` records as a stage mark); nothing in any other build.
 * @internal
 */
export function mark(stage: string): void {
  if (PROFILE) current?.log("debug", `loanhost-profile:${stage}`);
}

/** The host in use. */
export function host(): Host {
  if (!current) throw new Error("no loanhost host: inside a test, call through a FakeHost");
  return current;
}

/** The caller's platform user id (a UUID, lower-case hyphenated). */
export const userId = (): string => host().userId();
/** The caller's role codes (`Admin`, `Agent`, …, and the baseline `User`). */
export const roles = (): string[] => host().roles();
/** Whether the caller holds any of the role codes. */
export const hasAnyRole = (...wanted: string[]): boolean => host().roles().some((r) => wanted.includes(r));
/** Whether the caller may read officer, processor and referrer names. */
export const canReadNames = (): boolean => host().canReadNames();
/** Today's date in UTC as `YYYY-MM-DD`, as the host sees it (inside the sandbox there is no
 * wall clock: `Date.now()` does not tell the time). */
export const today = (): string => host().today();

/** Log lines, tagged by the host with the plugin's name and the call id (capped per call). */
export const log = {
  debug: (message: unknown) => host().log("debug", String(message)),
  info: (message: unknown) => host().log("info", String(message)),
  warn: (message: unknown) => host().log("warn", String(message)),
  error: (message: unknown) => host().log("error", String(message)),
};
