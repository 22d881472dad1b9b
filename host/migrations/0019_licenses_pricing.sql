-- Schema v19 (both engines): users' state licences and the platform's rate sheet, imported as
-- `user_licenses.jsonl` and `pricing.jsonl` (docs/design.md §5), read by `get_user_licenses`
-- and `search_pricing` through the host's licensing and pricing capabilities.
--
-- * `user_licenses`: a user's licence per state (`UserLicenseInfo`). An import's lines for a
--   user replace that user's licences whole; users it does not name keep theirs.
-- * `rate_sheet`: one row per priced product band: who it fits (loan type, purpose or any,
--   occupancy, term, lock, credit score, LTV and amount bands, bounds inclusive) and its
--   indicative rate and points (decimals scaled by 10^4, as every amount). An import with a
--   `pricing.jsonl` replaces the sheet whole; `line` is the row's line in its file.

CREATE TABLE user_licenses (
    user_id          TEXT NOT NULL,
    state            TEXT NOT NULL,
    license_number   TEXT,
    expiration_year  TEXT,
    PRIMARY KEY (user_id, state)
);

CREATE TABLE rate_sheet (
    line              BIGINT PRIMARY KEY,
    product           TEXT NOT NULL,
    loan_type         TEXT NOT NULL,
    purpose           TEXT,
    occupancy         TEXT NOT NULL,
    term_months       BIGINT NOT NULL,
    lock_days         BIGINT NOT NULL,
    min_credit_score  BIGINT NOT NULL,
    max_credit_score  BIGINT NOT NULL,
    min_ltv           BIGINT NOT NULL,
    max_ltv           BIGINT NOT NULL,
    min_loan_amount   BIGINT NOT NULL,
    max_loan_amount   BIGINT NOT NULL,
    rate              BIGINT NOT NULL,
    points            BIGINT NOT NULL,
    effective_date    TEXT NOT NULL
);
CREATE INDEX rate_sheet_fit ON rate_sheet (loan_type, term_months, lock_days, occupancy);
