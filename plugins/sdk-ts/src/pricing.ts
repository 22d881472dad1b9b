/**
 * Indicative prices from the rate sheet the platform imports (`loan:reporting@1.2.0` `pricing`),
 * for a plugin whose manifest grants `rate-sheet`. The host refuses a scenario unless the caller
 * holds a licence in its property state that has not expired (`forbidden: …`); a scenario
 * carries no borrower identifier.
 *
 *     const priced = quote({ propertyState: "TX", loanAmount: Decimal.parse("320000"),
 *       propertyValue: Decimal.parse("400000"), creditScore: 740, loanType: "Conventional",
 *       purpose: "Purchase", occupancy: "PrimaryResidence", termMonths: 360, lockDays: 30 });
 *     priced.ltv;             // Decimal 80.00
 *     priced.quotes[0].rate;  // the lowest rate, a Decimal
 */
import type { Decimal } from "./decimal.js";
import { host } from "./host.js";

/** A loan scenario: give `propertyValue` or `ltv` (percent). */
export interface Scenario {
  propertyState: string;
  loanAmount: Decimal;
  propertyValue?: Decimal;
  ltv?: Decimal;
  creditScore: number;
  loanType: string;
  purpose: string;
  occupancy: string;
  termMonths: number;
  lockDays: number;
}

/** One product's indicative price: its name on the sheet, the note rate (percent), points
 * (percent of the amount; negative: a credit), the sheet's effective date (`YYYY-MM-DD`). */
export interface ProductPrice {
  product: string;
  rate: Decimal;
  points: Decimal;
  effectiveDate: string;
}

/** The LTV the sheet was read at (percent) and the products that fit, lowest rate first (at
 * most 20; none when nothing fits). */
export interface Priced {
  ltv: Decimal;
  quotes: ProductPrice[];
}

/** The rate sheet's prices for `scenario`. */
export function quote(scenario: Scenario): Priced {
  return host().quote(scenario);
}
