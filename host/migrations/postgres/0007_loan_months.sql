-- Schema v6 (PostgreSQL): report_loans by Month, Quarter or Year and the pipeline's monthly
-- trend formatted a date per loan (0.4-0.8 s at 1M loans; the hand-written GROUP BY over the
-- dates 0.5-1.1 s). Each of the snapshot's date-time fields now has its month index beside
-- it (`year x 12 + month - 1`, UTC, as history rows hold theirs; NULL when the date is), and
-- a covering index leads with it and holds the three amounts: the group-by hashes an integer
-- and labels a few hundred months, and a window of whole months is a range of the index
-- (docs/decisions.md, "Schema v6"). The import computes the same values
-- (history_keys::month_index). Converts in place; the UPDATE leaves the old row versions to
-- autovacuum, as any bulk upsert does, and the indexes are rebuilt after it.

ALTER TABLE loans
    ADD COLUMN status_month INTEGER,
    ADD COLUMN estimated_closing_month INTEGER,
    ADD COLUMN updated_month INTEGER;
UPDATE loans SET
    status_month = (EXTRACT(YEAR FROM (to_timestamp(status_date / 1000.0) AT TIME ZONE 'UTC')) * 12
        + EXTRACT(MONTH FROM (to_timestamp(status_date / 1000.0) AT TIME ZONE 'UTC')) - 1)::integer,
    estimated_closing_month = (EXTRACT(YEAR FROM (to_timestamp(estimated_closing_date / 1000.0) AT TIME ZONE 'UTC')) * 12
        + EXTRACT(MONTH FROM (to_timestamp(estimated_closing_date / 1000.0) AT TIME ZONE 'UTC')) - 1)::integer,
    updated_month = (EXTRACT(YEAR FROM (to_timestamp(updated / 1000.0) AT TIME ZONE 'UTC')) * 12
        + EXTRACT(MONTH FROM (to_timestamp(updated / 1000.0) AT TIME ZONE 'UTC')) - 1)::integer
WHERE status_date IS NOT NULL OR estimated_closing_date IS NOT NULL OR updated IS NOT NULL;
CREATE INDEX loans_status_months ON loans
    (status_month, loan_amount, locked_compensation, estimated_compensation);
CREATE INDEX loans_closing_months ON loans
    (estimated_closing_month, loan_amount, locked_compensation, estimated_compensation);
CREATE INDEX loans_updated_months ON loans
    (updated_month, loan_amount, locked_compensation, estimated_compensation);
-- The UPDATE wrote a new version of every loan and an entry for it in each of the table's
-- indexes, doubling them: the covering indexes' index-only scans then read twice the pages
-- (the organisation-wide group-bys by status, type, purpose and officer 30-60 % slower until
-- rebuilt). Rebuilt here, in the migration's transaction.
REINDEX TABLE loans;
-- Statistics for the new columns now, not when autovacuum next looks: without them the
-- planner misjudged a scoped caller's date window (an Agent's 24 months: 64 ms against
-- 0.5 ms once analysed).
ANALYZE loans;
