/**
 * Users' state licences (`loan:reporting@1.2.0` `licensing`), for a plugin whose manifest grants
 * `user-licenses`. The host applies the per-user access check on every call (the caller's own;
 * any agent's for Admin; the agents a ConciergeKey manages; no Processor branch).
 *
 *     const mine = userLicenses();          // the caller's
 *     const theirs = userLicenses(userId);  // undefined: unknown, or not the caller's to read
 */
import { host } from "./host.js";

/** One state licence: the 2-letter state (as a loan's `propertyState`), the number the state
 * issued, the year it expires (`YYYY`; it holds through that year's end). */
export interface License {
  state: string;
  stateLicenseNumber?: string;
  expirationYear?: string;
}

/** A user's licences, by state. */
export interface LicensesOf {
  userId: string;
  licenses: License[];
}

/** The licences of `userId` (undefined: the caller's); undefined when the user is unknown or
 * one the caller may not read (the two answer alike). */
export function userLicenses(userId?: string): LicensesOf | undefined {
  return host().userLicenses(userId);
}
