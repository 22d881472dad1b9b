-- Schema v5: covering indexes for report_loans grouped by loan officer or referring agent,
-- organisation-wide. Such a group-by read the whole snapshot and sorted it by (id, name): at
-- 1M loans 2-4 s on SQLite, the hand-written GROUP BY as slow (it walked the id index with a
-- table lookup per loan). These hold (id, name) then the three amounts, so the group-by reads
-- one index in key order and aggregates as it reads, as the status, type and purpose indexes
-- of 0003 do (catalog.rs, COVERED_GROUPS). An Agent's group-by by id alone takes a prefix.
-- The referrer's index replaces `loans_referrer`, of which it is a prefix (the scope's
-- `referring_agent_id = ?` uses it as it did that one).
CREATE INDEX loans_officer_groups ON loans
    (loan_officer_id, loan_officer_name, loan_amount, locked_compensation, estimated_compensation);
CREATE INDEX loans_referrer_groups ON loans
    (referring_agent_id, referring_agent_name, loan_amount, locked_compensation, estimated_compensation);
DROP INDEX loans_referrer;
