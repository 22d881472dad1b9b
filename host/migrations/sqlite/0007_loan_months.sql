-- Schema v6 (SQLite): report_loans by Month, Quarter or Year and the pipeline's monthly trend
-- formatted a date per loan and sorted a million labels (1.4-2.1 s at 1M loans; the
-- hand-written GROUP BY over the dates as slow). Each of the snapshot's date-time fields now
-- has its month index beside it (`year x 12 + month - 1`, UTC, as history rows hold theirs;
-- NULL when the date is), and a covering index leads with it and holds the three amounts, so
-- an organisation-wide month, quarter or year group-by reads one index in key order and
-- labels a few hundred months (docs/decisions.md, "Schema v6"). The import computes the
-- same values (history_keys::month_index). Converts in place; nothing is re-imported.

ALTER TABLE loans ADD COLUMN status_month INTEGER;
ALTER TABLE loans ADD COLUMN estimated_closing_month INTEGER;
ALTER TABLE loans ADD COLUMN updated_month INTEGER;
UPDATE loans SET
    status_month = CAST(strftime('%Y', status_date / 1000.0, 'unixepoch') AS INTEGER) * 12
        + CAST(strftime('%m', status_date / 1000.0, 'unixepoch') AS INTEGER) - 1,
    estimated_closing_month = CAST(strftime('%Y', estimated_closing_date / 1000.0, 'unixepoch') AS INTEGER) * 12
        + CAST(strftime('%m', estimated_closing_date / 1000.0, 'unixepoch') AS INTEGER) - 1,
    updated_month = CAST(strftime('%Y', updated / 1000.0, 'unixepoch') AS INTEGER) * 12
        + CAST(strftime('%m', updated / 1000.0, 'unixepoch') AS INTEGER) - 1;
CREATE INDEX loans_status_months ON loans
    (status_month, loan_amount, locked_compensation, estimated_compensation);
CREATE INDEX loans_closing_months ON loans
    (estimated_closing_month, loan_amount, locked_compensation, estimated_compensation);
CREATE INDEX loans_updated_months ON loans
    (updated_month, loan_amount, locked_compensation, estimated_compensation);
