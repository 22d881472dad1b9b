// The platform's fixed vocabulary and the spec's `filter` schema, as the Rust SDK has them.
// Generated: plugins/sdk/tests/other_sdks.rs keeps this file equal to the Rust SDK
// (`LOANHOST_BLESS=1 cargo test -p loanhost-guest --test other_sdks` rewrites it).

/** The 45 loan statuses, in the spec's order. */
export const LOAN_STATUSES = [
    "App Started",
    "Loan Officer Review",
    "Loan Open",
    "Loan Prequal",
    "Loan Preapproval",
    "Loan Submitted",
    "Loan Approved",
    "Loan Docs",
    "Loan Funded",
    "Loan On Hold",
    "Loan Suspended",
    "Loan Canceled",
    "Loan Denied",
    "Loan Closed",
    "Loan Underwriting",
    "Loan Other",
    "Loan Recorded",
    "Loan Clear To Close",
    "Loan Processing",
    "Loan Final Underwriting",
    "Loan Docs Back",
    "Loan Funding Conditions",
    "Loan Final Docs",
    "Loan Sold",
    "Loan Pre-Processing",
    "Loan Document Check",
    "Loan Document Check Failed",
    "Loan Pre-Underwriting",
    "Loan Condition Review",
    "Loan Pre-Doc QC",
    "Loan Docs Ordered",
    "Loan Docs Drawn",
    "Loan Investor Conditions",
    "Loan Investor Conditions Sent",
    "Loan Ready For Sale",
    "Loan Submitted For Purchase Review",
    "Loan In Purchase Review",
    "Loan Pre-Purchase Conditions",
    "Loan Submitted For Final Purchase Review",
    "Loan In Final Purchase Review",
    "Loan Clear To Purchase",
    "Loan Purchased",
    "Loan Counter Offer",
    "Loan Withdrawn",
    "Loan Archived",
] as const;

/** The loan types. */
export const LOAN_TYPES = [
    "Conventional",
    "FHA",
    "VA",
    "USDA/Rural Housing",
    "Other",
] as const;

/** The loan purposes. */
export const PURPOSES = [
    "Purchase",
    "Refinance",
    "Refinance Cashout",
    "Construction",
    "Construction Perm",
    "Other",
    "FHA Streamline Refi",
    "VA IRRRL",
    "Home Equity",
] as const;

/** The JSON Schema of the spec's `filter` argument (the snapshot-backed reports). */
export const LOAN_FILTER_SCHEMA: Record<string, unknown> = {
  "additionalProperties": false,
  "description": "Optional narrowing; every field is optional and can only narrow what the caller's role permits. Do not use statuses or status/closing dates to count loans closed or funded in a period (use report_loan_milestones).",
  "properties": {
    "closingDateFrom": {
      "description": "Inclusive lower bound on the estimated closing date (sparsely populated).",
      "format": "date-time",
      "type": "string"
    },
    "closingDateTo": {
      "description": "Inclusive upper bound on the estimated closing date (sparsely populated).",
      "format": "date-time",
      "type": "string"
    },
    "commissionMax": {
      "description": "Locked compensation in USD, inclusive.",
      "type": "number"
    },
    "commissionMin": {
      "description": "Locked compensation in USD, inclusive.",
      "type": "number"
    },
    "loanAmountMax": {
      "description": "USD, inclusive.",
      "type": "number"
    },
    "loanAmountMin": {
      "description": "USD, inclusive.",
      "type": "number"
    },
    "loanOfficerIds": {
      "description": "Loan officer user ids (the keyId of report_loans grouped by LoanOfficer), OR'd; intersected with the caller's scope; an empty list is unconstrained.",
      "items": {
        "format": "uuid",
        "type": "string"
      },
      "type": "array"
    },
    "loanTypes": {
      "description": "Loan types, OR'd; an empty list is unconstrained.",
      "items": {
        "enum": [
          "Conventional",
          "FHA",
          "VA",
          "USDA/Rural Housing",
          "Other"
        ],
        "type": "string"
      },
      "type": "array"
    },
    "processorId": {
      "description": "Loans handled by this processor user.",
      "format": "uuid",
      "type": "string"
    },
    "propertyState": {
      "description": "Two-letter subject-property state code (any case: `ca` is `CA`); a state's name is refused with its code named.",
      "examples": [
        "CA",
        "TX"
      ],
      "pattern": "^[A-Za-z]{2}$",
      "type": "string"
    },
    "purposes": {
      "description": "Loan purposes, OR'd; an empty list is unconstrained.",
      "items": {
        "enum": [
          "Purchase",
          "Refinance",
          "Refinance Cashout",
          "Construction",
          "Construction Perm",
          "Other",
          "FHA Streamline Refi",
          "VA IRRRL",
          "Home Equity"
        ],
        "type": "string"
      },
      "type": "array"
    },
    "referringAgentId": {
      "description": "Loans referred by this user.",
      "format": "uuid",
      "type": "string"
    },
    "searchText": {
      "description": "Case-insensitive match on loan number and borrower first name, last name, email; every whitespace-separated token must match.",
      "type": "string"
    },
    "statusDateFrom": {
      "description": "Inclusive lower bound on the date the current status was set.",
      "format": "date-time",
      "type": "string"
    },
    "statusDateTo": {
      "description": "Inclusive upper bound on the date the current status was set.",
      "format": "date-time",
      "type": "string"
    },
    "statuses": {
      "description": "Current loan status names, OR'd; an empty list is unconstrained. A status is where a loan sits now: to count loans closed or funded in a period use report_loan_milestones.",
      "items": {
        "enum": [
          "App Started",
          "Loan Officer Review",
          "Loan Open",
          "Loan Prequal",
          "Loan Preapproval",
          "Loan Submitted",
          "Loan Approved",
          "Loan Docs",
          "Loan Funded",
          "Loan On Hold",
          "Loan Suspended",
          "Loan Canceled",
          "Loan Denied",
          "Loan Closed",
          "Loan Underwriting",
          "Loan Other",
          "Loan Recorded",
          "Loan Clear To Close",
          "Loan Processing",
          "Loan Final Underwriting",
          "Loan Docs Back",
          "Loan Funding Conditions",
          "Loan Final Docs",
          "Loan Sold",
          "Loan Pre-Processing",
          "Loan Document Check",
          "Loan Document Check Failed",
          "Loan Pre-Underwriting",
          "Loan Condition Review",
          "Loan Pre-Doc QC",
          "Loan Docs Ordered",
          "Loan Docs Drawn",
          "Loan Investor Conditions",
          "Loan Investor Conditions Sent",
          "Loan Ready For Sale",
          "Loan Submitted For Purchase Review",
          "Loan In Purchase Review",
          "Loan Pre-Purchase Conditions",
          "Loan Submitted For Final Purchase Review",
          "Loan In Final Purchase Review",
          "Loan Clear To Purchase",
          "Loan Purchased",
          "Loan Counter Offer",
          "Loan Withdrawn",
          "Loan Archived"
        ],
        "type": "string"
      },
      "type": "array"
    },
    "updatedFrom": {
      "description": "Inclusive lower bound on the last-updated date.",
      "format": "date-time",
      "type": "string"
    },
    "updatedTo": {
      "description": "Inclusive upper bound on the last-updated date.",
      "format": "date-time",
      "type": "string"
    }
  },
  "type": "object"
};
