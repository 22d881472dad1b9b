-- Schema v3 (SQLite): integer surrogate keys designed from the reports' queries back
-- (docs/decisions.md, "Schema v3"). Converts a v2 database in place; nothing is re-imported.
--
-- * `loan_keys` gives every loan id the platform has mentioned (snapshot, LOS history or
--   warehouse) one integer key. History and warehouse rows reference loans by that key, so a
--   report joins and de-duplicates integers instead of 36-character text.
-- * `loans.key` is the loan's key and the table's rowid (a B-tree lookup by integer);
--   the UUID stays as the attribute `id` (unique through `loan_keys`; the snapshot has no
--   second index on it: reports never look a loan up by id, and imports upsert by key).
-- * History and warehouse rows are clustered by loan (WITHOUT ROWID, primary key first) and
--   have a covering index by time, so a window of history is one range scan of a narrow index.
-- * History rows carry the loan's amount and whether the loan is in the snapshot
--   (`in_snapshot`), kept in step by the import: an organisation-wide milestone report reads
--   no loan row at all.

CREATE TABLE loan_keys (
    key INTEGER PRIMARY KEY,
    id  TEXT NOT NULL UNIQUE
);
INSERT INTO loan_keys (id) SELECT id FROM loans ORDER BY id;
INSERT INTO loan_keys (id)
    SELECT DISTINCT loan_id FROM los_status_history WHERE loan_id NOT IN (SELECT id FROM loan_keys) ORDER BY 1;
INSERT INTO loan_keys (id)
    SELECT DISTINCT loan_id FROM dw_loan_milestones WHERE loan_id NOT IN (SELECT id FROM loan_keys) ORDER BY 1;

CREATE TABLE loans_v3 (
    key                        INTEGER PRIMARY KEY,
    id                         TEXT NOT NULL,
    loan_number                TEXT,
    borrower_first_name        TEXT,
    borrower_last_name         TEXT,
    borrower_email             TEXT,
    search_key                 TEXT NOT NULL,
    status                     TEXT NOT NULL,
    status_date                BIGINT,
    loan_type                  TEXT,
    purpose                    TEXT,
    estimated_closing_date     BIGINT,
    updated                    BIGINT,
    loan_amount                BIGINT,
    locked_compensation        BIGINT,
    estimated_compensation     BIGINT,
    property_state             TEXT,
    company_id                 TEXT,
    loan_officer_id            TEXT,
    loan_officer_name          TEXT,
    loan_assistant_id          TEXT,
    processor_id               TEXT,
    processor_name             TEXT,
    referring_agent_id         TEXT,
    referring_agent_name       TEXT
);
INSERT INTO loans_v3
    SELECT k.key, l.id, l.loan_number, l.borrower_first_name, l.borrower_last_name, l.borrower_email,
           l.search_key, l.status, l.status_date, l.loan_type, l.purpose, l.estimated_closing_date,
           l.updated, l.loan_amount, l.locked_compensation, l.estimated_compensation, l.property_state,
           l.company_id, l.loan_officer_id, l.loan_officer_name, l.loan_assistant_id, l.processor_id,
           l.processor_name, l.referring_agent_id, l.referring_agent_name
    FROM loans l JOIN loan_keys k ON k.id = l.id ORDER BY k.key;
DROP TABLE loans;
ALTER TABLE loans_v3 RENAME TO loans;

CREATE TABLE los_status_history_v3 (
    loan_key    INTEGER NOT NULL,
    status      TEXT NOT NULL,
    occurred_at BIGINT NOT NULL,
    loan_amount BIGINT,
    in_snapshot INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (loan_key, status, occurred_at)
) WITHOUT ROWID;
INSERT INTO los_status_history_v3 (loan_key, status, occurred_at, loan_amount, in_snapshot)
    SELECT k.key, h.status, h.occurred_at, l.loan_amount, l.key IS NOT NULL
    FROM los_status_history h
    JOIN loan_keys k ON k.id = h.loan_id
    LEFT JOIN loans l ON l.key = k.key
    ORDER BY 1, 2, 3;
DROP TABLE los_status_history;
ALTER TABLE los_status_history_v3 RENAME TO los_status_history;

CREATE TABLE dw_loan_milestones_v3 (
    loan_key    INTEGER NOT NULL,
    milestone   TEXT NOT NULL,
    occurred_at BIGINT NOT NULL,
    PRIMARY KEY (loan_key, milestone, occurred_at)
) WITHOUT ROWID;
INSERT INTO dw_loan_milestones_v3 (loan_key, milestone, occurred_at)
    SELECT k.key, m.milestone, m.occurred_at
    FROM dw_loan_milestones m JOIN loan_keys k ON k.id = m.loan_id
    ORDER BY 1, 2, 3;
DROP TABLE dw_loan_milestones;
ALTER TABLE dw_loan_milestones_v3 RENAME TO dw_loan_milestones;

-- Indexes (v2's on the snapshot, with the same names; history and warehouse by time).
CREATE INDEX loans_officer ON loans (loan_officer_id, status);
CREATE INDEX loans_assistant ON loans (loan_assistant_id);
CREATE INDEX loans_referrer ON loans (referring_agent_id);
CREATE INDEX loans_company ON loans (company_id, status);
CREATE INDEX loans_processor ON loans (processor_id);
-- Covering indexes for the whole-snapshot group-bys the reports issue (catalog.rs,
-- COVERED_GROUPS): read in key order, nothing sorted, no table row read.
CREATE INDEX loans_status ON loans (status, loan_amount, locked_compensation, estimated_compensation);
CREATE INDEX loans_type ON loans (loan_type, loan_amount, locked_compensation, estimated_compensation);
CREATE INDEX loans_purpose ON loans (purpose, loan_amount, locked_compensation, estimated_compensation);
CREATE INDEX loans_status_date ON loans (status_date);
CREATE INDEX loans_updated ON loans (updated);
CREATE INDEX loans_closing ON loans (estimated_closing_date);
CREATE INDEX los_history_time ON los_status_history (occurred_at, status, in_snapshot, loan_amount);
CREATE INDEX dw_milestones_time ON dw_loan_milestones (occurred_at, milestone);
