-- Schema v13 (both engines): an organisation-wide milestone report keyed on the raw status
-- read every (period, set of statuses) of the window's counts (schema v7) and gave each set to
-- the statuses it holds: over 52 months, the demo's 29 months of 7,800 sets each (225k rows),
-- 346-418 ms on PostgreSQL at 1M loans against a bound of 300 ms; then, per loan, the sets
-- holding a status without a bit of its own, with their history rows (docs/decisions.md,
-- "Schema v13"). A raw status needs no combination of statuses: a loan counts once for a
-- status in a period if it held it there. These tables keep, per (period, status text), how
-- many loans of the snapshot held the status in the period and what their sets carry of them
-- (the loan amount: how many have one, their sum, minimum and maximum), the partials the raw
-- report merges. A listed status (history_keys.rs, STATUS_BITS) is the sum of the counted
-- sets holding its bit; a status without a bit of its own is counted from the history rows
-- holding the unlisted bit (62). The import counts every period again whose sets it changed,
-- after their counts. Converts in place: counted here.
--
-- Those history rows are found by a partial index of their own (few, if any: none in the demo
-- data). The sets' partial indexes on the unlisted bit (0008) served the organisation-wide
-- raw report, which no longer reads sets; they go. Read from the sets instead, the count took
-- PostgreSQL 0.4-0.6 s a unit at 1M loans for no row: it prices `(status_bits & bit) <> 0` as
-- most rows and scanned them, where the history's `status_bit` has statistics.
--
-- Portable: the tables are small (a row per period and status), so SQLite's rowid table and
-- PostgreSQL's heap serve alike, and the index holds its columns on both.

CREATE TABLE los_status_counts_months (
    period_index INTEGER NOT NULL,
    status       TEXT NOT NULL,
    loans        BIGINT NOT NULL,
    amounts      BIGINT NOT NULL,
    amount_sum   BIGINT,
    amount_min   BIGINT,
    amount_max   BIGINT,
    PRIMARY KEY (period_index, status)
);
CREATE TABLE los_status_counts_weeks (
    period_index INTEGER NOT NULL,
    status       TEXT NOT NULL,
    loans        BIGINT NOT NULL,
    amounts      BIGINT NOT NULL,
    amount_sum   BIGINT,
    amount_min   BIGINT,
    amount_max   BIGINT,
    PRIMARY KEY (period_index, status)
);
DROP INDEX los_history_months_unlisted;
DROP INDEX los_history_weeks_unlisted;
CREATE INDEX los_status_history_unlisted ON los_status_history (loan_key, status, month_index, week_index)
    WHERE status_bit = 4611686018427387904;

-- The listed statuses and their bits (host/src/data/history_keys.rs, STATUS_BITS), for this
-- conversion only.
CREATE TEMPORARY TABLE listed_statuses_0014 (status TEXT NOT NULL, bit BIGINT NOT NULL);
INSERT INTO listed_statuses_0014 (status, bit) VALUES
    ('App Started', 1),
    ('Loan Officer Review', 2),
    ('Loan Open', 4),
    ('Loan Prequal', 8),
    ('Loan Preapproval', 16),
    ('Loan Submitted', 32),
    ('Loan Approved', 64),
    ('Loan Docs', 128),
    ('Loan Funded', 256),
    ('Loan On Hold', 512),
    ('Loan Suspended', 1024),
    ('Loan Canceled', 2048),
    ('Loan Denied', 4096),
    ('Loan Closed', 8192),
    ('Loan Underwriting', 16384),
    ('Loan Other', 32768),
    ('Loan Recorded', 65536),
    ('Loan Clear To Close', 131072),
    ('Loan Processing', 262144),
    ('Loan Final Underwriting', 524288),
    ('Loan Docs Back', 1048576),
    ('Loan Funding Conditions', 2097152),
    ('Loan Final Docs', 4194304),
    ('Loan Sold', 8388608),
    ('Loan Pre-Processing', 16777216),
    ('Loan Document Check', 33554432),
    ('Loan Document Check Failed', 67108864),
    ('Loan Pre-Underwriting', 134217728),
    ('Loan Condition Review', 268435456),
    ('Loan Pre-Doc QC', 536870912),
    ('Loan Docs Ordered', 1073741824),
    ('Loan Docs Drawn', 2147483648),
    ('Loan Investor Conditions', 4294967296),
    ('Loan Investor Conditions Sent', 8589934592),
    ('Loan Ready For Sale', 17179869184),
    ('Loan Submitted For Purchase Review', 34359738368),
    ('Loan In Purchase Review', 68719476736),
    ('Loan Pre-Purchase Conditions', 137438953472),
    ('Loan Submitted For Final Purchase Review', 274877906944),
    ('Loan In Final Purchase Review', 549755813888),
    ('Loan Clear To Purchase', 1099511627776),
    ('Loan Purchased', 2199023255552),
    ('Loan Counter Offer', 4398046511104),
    ('Loan Withdrawn', 8796093022208),
    ('Loan Archived', 17592186044416),
    ('Rate Locked', 35184372088832);
INSERT INTO los_status_counts_months (period_index, status, loans, amounts, amount_sum, amount_min, amount_max)
    SELECT c.period_index, b.status, SUM(c.loans), SUM(c.amounts), SUM(c.amount_sum),
           MIN(c.amount_min), MAX(c.amount_max)
    FROM los_set_counts_months c JOIN listed_statuses_0014 b ON (c.status_bits & b.bit) <> 0
    GROUP BY c.period_index, b.status;
INSERT INTO los_status_counts_months (period_index, status, loans, amounts, amount_sum, amount_min, amount_max)
    SELECT d.pi, d.st, COUNT(*), COUNT(d.amount), SUM(d.amount), MIN(d.amount), MAX(d.amount)
    FROM (SELECT DISTINCT r.period_index AS pi, h.status AS st, r.loan_key AS lk, r.loan_amount AS amount
          FROM los_status_history h JOIN los_history_months r
              ON r.period_index = h.month_index AND r.loan_key = h.loan_key
          WHERE h.status_bit = 4611686018427387904 AND r.in_snapshot = 1) d
    GROUP BY d.pi, d.st;
INSERT INTO los_status_counts_weeks (period_index, status, loans, amounts, amount_sum, amount_min, amount_max)
    SELECT c.period_index, b.status, SUM(c.loans), SUM(c.amounts), SUM(c.amount_sum),
           MIN(c.amount_min), MAX(c.amount_max)
    FROM los_set_counts_weeks c JOIN listed_statuses_0014 b ON (c.status_bits & b.bit) <> 0
    GROUP BY c.period_index, b.status;
INSERT INTO los_status_counts_weeks (period_index, status, loans, amounts, amount_sum, amount_min, amount_max)
    SELECT d.pi, d.st, COUNT(*), COUNT(d.amount), SUM(d.amount), MIN(d.amount), MAX(d.amount)
    FROM (SELECT DISTINCT r.period_index AS pi, h.status AS st, r.loan_key AS lk, r.loan_amount AS amount
          FROM los_status_history h JOIN los_history_weeks r
              ON r.period_index = h.week_index AND r.loan_key = h.loan_key
          WHERE h.status_bit = 4611686018427387904 AND r.in_snapshot = 1) d
    GROUP BY d.pi, d.st;
DROP TABLE listed_statuses_0014;
