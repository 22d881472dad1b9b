-- Schema v7 (SQLite): the organisation-wide milestone report over a year of months
-- counted its loans per (period, set of statuses) from the period sets every time: 225k
-- groups out of the window's sets at 1M loans, 0.5-0.7 s on PostgreSQL and 1.8-2.1 s
-- on SQLite before anything was labelled (docs/decisions.md, "Schema v7"). These tables keep
-- those counts for the loans in the snapshot, one row per (period, set of bits): how many
-- loans, and what the sets carry of them (the loan amount: how many have one, their sum,
-- minimum and maximum), so that every aggregate the report may ask merges from them. The
-- import keeps them in step with the sets: every period whose sets an import changed is
-- counted again before it commits. Converts in place: counted here from the sets.
--
-- The raw status as the key still reads, per loan, the sets that hold the unlisted bit (bit
-- 62: statuses without a bit of their own); a partial index finds those few without reading
-- the window's sets.

CREATE TABLE los_set_counts_months (
    period_index INTEGER NOT NULL,
    status_bits  BIGINT NOT NULL,
    loans        BIGINT NOT NULL,
    amounts      BIGINT NOT NULL,
    amount_sum   BIGINT,
    amount_min   BIGINT,
    amount_max   BIGINT,
    PRIMARY KEY (period_index, status_bits)
)WITHOUT ROWID;
CREATE TABLE los_set_counts_weeks (
    period_index INTEGER NOT NULL,
    status_bits  BIGINT NOT NULL,
    loans        BIGINT NOT NULL,
    amounts      BIGINT NOT NULL,
    amount_sum   BIGINT,
    amount_min   BIGINT,
    amount_max   BIGINT,
    PRIMARY KEY (period_index, status_bits)
)WITHOUT ROWID;
INSERT INTO los_set_counts_months
    SELECT period_index, status_bits, COUNT(*), COUNT(loan_amount), SUM(loan_amount),
           MIN(loan_amount), MAX(loan_amount)
    FROM los_history_months WHERE in_snapshot = 1 GROUP BY period_index, status_bits;
INSERT INTO los_set_counts_weeks
    SELECT period_index, status_bits, COUNT(*), COUNT(loan_amount), SUM(loan_amount),
           MIN(loan_amount), MAX(loan_amount)
    FROM los_history_weeks WHERE in_snapshot = 1 GROUP BY period_index, status_bits;
CREATE INDEX los_history_months_unlisted ON los_history_months (period_index, loan_key)
    WHERE (status_bits & 4611686018427387904) <> 0;
CREATE INDEX los_history_weeks_unlisted ON los_history_weeks (period_index, loan_key)
    WHERE (status_bits & 4611686018427387904) <> 0;
