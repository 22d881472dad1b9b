-- Schema v10 (PostgreSQL): `mlo_pipeline_report` counts the warehouse's deals per (period, stage).
-- By week over all history (25k deals at 1M loans, 1,636 groups) the statement alone took
-- 7.9 ms on PostgreSQL, as long as the hand-written SQL, which left the host and the guest no
-- room for their rows (docs/decisions.md, "Schema v10"). These tables keep the deals per
-- calendar month and per ISO week (numbered as schema v8's warehouse counts) and stage, as
-- schema v8 keeps the warehouse's milestones: a window's whole periods are read from them, its
-- partial first and last periods from the rows. The import counts again every period a deal
-- it writes was in or moves into, before it commits. Converts in place: counted here.

CREATE TABLE dw_deal_counts_months (
    period_index INTEGER NOT NULL,
    stage        TEXT NOT NULL,
    deals        BIGINT NOT NULL,
    PRIMARY KEY (period_index, stage)
);
CREATE TABLE dw_deal_counts_weeks (
    period_index INTEGER NOT NULL,
    stage        TEXT NOT NULL,
    deals        BIGINT NOT NULL,
    PRIMARY KEY (period_index, stage)
);
INSERT INTO dw_deal_counts_months
    SELECT (EXTRACT(YEAR FROM (to_timestamp(created_at / 1000.0) AT TIME ZONE 'UTC')) * 12 + EXTRACT(MONTH FROM (to_timestamp(created_at / 1000.0) AT TIME ZONE 'UTC')) - 1)::integer, stage, COUNT(*)
    FROM dw_deals GROUP BY 1, 2;
INSERT INTO dw_deal_counts_weeks
    SELECT ((((created_at - (((created_at % 86400000) + 86400000) % 86400000)) / 86400000) + 3 - ((((((created_at - (((created_at % 86400000) + 86400000) % 86400000)) / 86400000) + 3) % 7) + 7) % 7)) / 7), stage, COUNT(*)
    FROM dw_deals GROUP BY 1, 2;
