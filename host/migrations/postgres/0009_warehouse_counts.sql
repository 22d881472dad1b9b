-- Schema v8 (PostgreSQL): the warehouse milestone report counted distinct loans per (period,
-- milestone) over every warehouse row of its window: over all history at 1M loans, 3.4M rows,
-- 1.8-2.7 s on PostgreSQL and 3.3-4.5 s on SQLite, the hand-written SQL as slow
-- (docs/decisions.md, "Schema v8"). These tables keep those counts per calendar month and per
-- ISO week (the periods' numbering is the LOS history's: `year x 12 + month - 1`, and weeks
-- since Monday 1969-12-29, UTC). A window's whole periods are read from them, its partial
-- first and last periods from the rows. The import counts again every period it added rows
-- to, before it commits. Converts in place: counted here from the rows.

CREATE TABLE dw_milestone_counts_months (
    period_index INTEGER NOT NULL,
    milestone    TEXT NOT NULL,
    loans        BIGINT NOT NULL,
    PRIMARY KEY (period_index, milestone)
);
CREATE TABLE dw_milestone_counts_weeks (
    period_index INTEGER NOT NULL,
    milestone    TEXT NOT NULL,
    loans        BIGINT NOT NULL,
    PRIMARY KEY (period_index, milestone)
);
INSERT INTO dw_milestone_counts_months
    SELECT (EXTRACT(YEAR FROM (to_timestamp(occurred_at / 1000.0) AT TIME ZONE 'UTC')) * 12 + EXTRACT(MONTH FROM (to_timestamp(occurred_at / 1000.0) AT TIME ZONE 'UTC')) - 1)::integer, milestone, COUNT(DISTINCT loan_key)
    FROM dw_loan_milestones GROUP BY 1, 2;
INSERT INTO dw_milestone_counts_weeks
    SELECT ((((occurred_at - (((occurred_at % 86400000) + 86400000) % 86400000)) / 86400000) + 3 - ((((((occurred_at - (((occurred_at % 86400000) + 86400000) % 86400000)) / 86400000) + 3) % 7) + 7) % 7)) / 7), milestone, COUNT(DISTINCT loan_key)
    FROM dw_loan_milestones GROUP BY 1, 2;
