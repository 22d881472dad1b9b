-- Schema v15 (SQLite): a person's loans with their period sets, side by side (docs/decisions.md,
-- "Schema v15: a person's loans with their sets"). A person's milestone report (an Agent's,
-- a referrer's, a ConciergeKey's officers') read its loans through the scope's indexes, each
-- loan's row, then each loan's sets by the sets' loan index: at 1M loans an Agent's 149 loans
-- were ~300 pages far apart, 0.6-1.0 ms for a year of months however small the answer. Here
-- each (person, loan) is one row, clustered by person: the person's role on the loan (bits:
-- 1 officer, 2 assistant, 4 referrer), what the sets carry of the loan (its amount), and the
-- loan's sets of every period as JSON pairs `[[period_index, status_bits], ...]`, months and
-- weeks. A person's loans are then one range of a few pages (0.05-0.15 ms); the host keeps the
-- window's periods and counts the sets as the statement did. Only loans of the snapshot with
-- history have rows. The import keeps the rows of every loan it writes (or whose history it
-- writes) in step, by the loan index below. Converts in place: built here from the loans and
-- their sets (at 1M loans: 1.4M rows, 337 MB with the loan index's 64 MB, built in 22 s).

CREATE TABLE person_loans (
    person_id   TEXT NOT NULL,
    loan_key    INTEGER NOT NULL,
    roles       INTEGER NOT NULL,
    loan_amount BIGINT,
    months      TEXT NOT NULL,
    weeks       TEXT NOT NULL,
    PRIMARY KEY (person_id, loan_key)
) WITHOUT ROWID;

INSERT INTO person_loans (person_id, loan_key, roles, loan_amount, months, weeks)
WITH p AS (
    SELECT person, key, SUM(DISTINCT role) AS roles FROM (
        SELECT key, loan_officer_id AS person, 1 AS role FROM loans WHERE loan_officer_id IS NOT NULL
        UNION ALL SELECT key, loan_assistant_id, 2 FROM loans WHERE loan_assistant_id IS NOT NULL
        UNION ALL SELECT key, referring_agent_id, 4 FROM loans WHERE referring_agent_id IS NOT NULL
    ) GROUP BY person, key
),
m AS (
    SELECT loan_key, json_group_array(json_array(period_index, status_bits)) AS sets
    FROM los_history_months GROUP BY loan_key
),
w AS (
    SELECT loan_key, json_group_array(json_array(period_index, status_bits)) AS sets
    FROM los_history_weeks GROUP BY loan_key
)
SELECT p.person, p.key, p.roles, l.loan_amount, m.sets, w.sets
FROM p JOIN loans l ON l.key = p.key JOIN m ON m.loan_key = p.key JOIN w ON w.loan_key = p.key
ORDER BY p.person, p.key;

CREATE INDEX person_loans_loan ON person_loans (loan_key);
