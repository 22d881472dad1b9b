-- Schema v4 (PostgreSQL): what the organisation-wide milestone report needs to count distinct
-- loans per (period, stage) without de-duplicating a window of history rows (docs/decisions.md,
-- "Schema v4"). Converts a v3 database in place; nothing is re-imported.
--
-- * History rows carry `month_index` (year x 12 + month - 1) and `week_index` (ISO weeks,
--   Monday start, numbered from Monday 1969-12-29): the period of `occurred_at` in UTC; and
--   `status_bit`, the status as one bit of a frozen table (host/src/data/history_keys.rs,
--   STATUS_BITS: the spec's 45 statuses in the spec's order, then `Rate Locked`; every other
--   status shares bit 62). The import computes the same.
-- * `los_history_months` and `los_history_weeks` hold one row per (period, loan) that has
--   history in the period: the union of its rows' status bits, and what history rows carry of
--   the loan (amount, in the snapshot). The import keeps them in step with the history and
--   the loans. Which statuses make a stage is the plugin's to say, so stages are not stored:
--   a report counts loans per (period, set of statuses), a few hundred groups, and gives each
--   stage the sets that hold one of its statuses.
--
-- The history table is written anew (as 0003 did) rather than updated in place, which would
-- leave a dead copy of every row behind.

CREATE TABLE los_status_history_v4 (
    loan_key    BIGINT NOT NULL,
    status      TEXT NOT NULL,
    occurred_at BIGINT NOT NULL,
    loan_amount BIGINT,
    in_snapshot INTEGER NOT NULL DEFAULT 0,
    month_index INTEGER NOT NULL,
    week_index  INTEGER NOT NULL,
    status_bit  BIGINT NOT NULL,
    PRIMARY KEY (loan_key, status, occurred_at)
);
INSERT INTO los_status_history_v4
    SELECT h.loan_key, h.status, h.occurred_at, h.loan_amount, h.in_snapshot,
        (EXTRACT(YEAR FROM (to_timestamp(h.occurred_at / 1000.0) AT TIME ZONE 'UTC')) * 12 + EXTRACT(MONTH FROM (to_timestamp(h.occurred_at / 1000.0) AT TIME ZONE 'UTC')) - 1)::integer,
        ((((h.occurred_at - (((h.occurred_at % 86400000) + 86400000) % 86400000)) / 86400000) + 3 - ((((((h.occurred_at - (((h.occurred_at % 86400000) + 86400000) % 86400000)) / 86400000) + 3) % 7) + 7) % 7)) / 7),
        CASE h.status
            WHEN 'App Started' THEN 1
            WHEN 'Loan Officer Review' THEN 2
            WHEN 'Loan Open' THEN 4
            WHEN 'Loan Prequal' THEN 8
            WHEN 'Loan Preapproval' THEN 16
            WHEN 'Loan Submitted' THEN 32
            WHEN 'Loan Approved' THEN 64
            WHEN 'Loan Docs' THEN 128
            WHEN 'Loan Funded' THEN 256
            WHEN 'Loan On Hold' THEN 512
            WHEN 'Loan Suspended' THEN 1024
            WHEN 'Loan Canceled' THEN 2048
            WHEN 'Loan Denied' THEN 4096
            WHEN 'Loan Closed' THEN 8192
            WHEN 'Loan Underwriting' THEN 16384
            WHEN 'Loan Other' THEN 32768
            WHEN 'Loan Recorded' THEN 65536
            WHEN 'Loan Clear To Close' THEN 131072
            WHEN 'Loan Processing' THEN 262144
            WHEN 'Loan Final Underwriting' THEN 524288
            WHEN 'Loan Docs Back' THEN 1048576
            WHEN 'Loan Funding Conditions' THEN 2097152
            WHEN 'Loan Final Docs' THEN 4194304
            WHEN 'Loan Sold' THEN 8388608
            WHEN 'Loan Pre-Processing' THEN 16777216
            WHEN 'Loan Document Check' THEN 33554432
            WHEN 'Loan Document Check Failed' THEN 67108864
            WHEN 'Loan Pre-Underwriting' THEN 134217728
            WHEN 'Loan Condition Review' THEN 268435456
            WHEN 'Loan Pre-Doc QC' THEN 536870912
            WHEN 'Loan Docs Ordered' THEN 1073741824
            WHEN 'Loan Docs Drawn' THEN 2147483648
            WHEN 'Loan Investor Conditions' THEN 4294967296
            WHEN 'Loan Investor Conditions Sent' THEN 8589934592
            WHEN 'Loan Ready For Sale' THEN 17179869184
            WHEN 'Loan Submitted For Purchase Review' THEN 34359738368
            WHEN 'Loan In Purchase Review' THEN 68719476736
            WHEN 'Loan Pre-Purchase Conditions' THEN 137438953472
            WHEN 'Loan Submitted For Final Purchase Review' THEN 274877906944
            WHEN 'Loan In Final Purchase Review' THEN 549755813888
            WHEN 'Loan Clear To Purchase' THEN 1099511627776
            WHEN 'Loan Purchased' THEN 2199023255552
            WHEN 'Loan Counter Offer' THEN 4398046511104
            WHEN 'Loan Withdrawn' THEN 8796093022208
            WHEN 'Loan Archived' THEN 17592186044416
            WHEN 'Rate Locked' THEN 35184372088832
            ELSE 4611686018427387904 END
    FROM los_status_history h
    ORDER BY 1, 2, 3;
DROP TABLE los_status_history;
ALTER TABLE los_status_history_v4 RENAME TO los_status_history;
ALTER INDEX los_status_history_v4_pkey RENAME TO los_status_history_pkey;
CREATE INDEX los_history_time ON los_status_history (occurred_at) INCLUDE (status, in_snapshot, loan_amount, loan_key);

-- Clustered by (period, loan) as written; the key's index holds every column, so a window is
-- one index-only range scan.
CREATE TABLE los_history_months (
    period_index INTEGER NOT NULL,
    loan_key     BIGINT NOT NULL,
    status_bits  BIGINT NOT NULL,
    loan_amount  BIGINT,
    in_snapshot  INTEGER NOT NULL,
    PRIMARY KEY (period_index, loan_key) INCLUDE (status_bits, loan_amount, in_snapshot)
);
CREATE TABLE los_history_weeks (
    period_index INTEGER NOT NULL,
    loan_key     BIGINT NOT NULL,
    status_bits  BIGINT NOT NULL,
    loan_amount  BIGINT,
    in_snapshot  INTEGER NOT NULL,
    PRIMARY KEY (period_index, loan_key) INCLUDE (status_bits, loan_amount, in_snapshot)
);
INSERT INTO los_history_months
    SELECT month_index, loan_key, bit_or(status_bit), MAX(loan_amount), MAX(in_snapshot)
    FROM los_status_history GROUP BY month_index, loan_key ORDER BY 1, 2;
INSERT INTO los_history_weeks
    SELECT week_index, loan_key, bit_or(status_bit), MAX(loan_amount), MAX(in_snapshot)
    FROM los_status_history GROUP BY week_index, loan_key ORDER BY 1, 2;
-- A loan's rows: what a caller's report reads of its loans' sets, and what the import brings
-- in step when a loan changes.
CREATE INDEX los_history_months_loan ON los_history_months (loan_key, period_index) INCLUDE (status_bits);
CREATE INDEX los_history_weeks_loan ON los_history_weeks (loan_key, period_index) INCLUDE (status_bits);
