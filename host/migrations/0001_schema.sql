-- loanhost schema: one portable DDL for SQLite and PostgreSQL.
-- Instants are UTC epoch milliseconds (BIGINT); decimals are scaled by 10^4 (BIGINT), so
-- sums are exact and both engines compare and bucket identically.

CREATE TABLE agents (
    id          TEXT PRIMARY KEY,
    email       TEXT NOT NULL,
    email_key   TEXT NOT NULL,      -- lower-cased email, for case-insensitive lookup
    first_name  TEXT,
    last_name   TEXT,
    company_id  TEXT
);
CREATE UNIQUE INDEX agents_email_key ON agents (email_key);

CREATE TABLE agent_roles (
    agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    role     TEXT NOT NULL,
    PRIMARY KEY (agent_id, role)
);

CREATE TABLE agent_managed (
    manager_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    agent_id   TEXT NOT NULL,
    PRIMARY KEY (manager_id, agent_id)
);

CREATE TABLE loans (
    id                         TEXT PRIMARY KEY,
    loan_number                TEXT,
    borrower_first_name        TEXT,
    borrower_last_name         TEXT,
    borrower_email             TEXT,
    search_key                 TEXT NOT NULL,  -- lower-cased loan number, names, email
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
CREATE INDEX loans_officer ON loans (loan_officer_id, status);
CREATE INDEX loans_assistant ON loans (loan_assistant_id);
CREATE INDEX loans_referrer ON loans (referring_agent_id);
CREATE INDEX loans_company ON loans (company_id, status);
CREATE INDEX loans_processor ON loans (processor_id);
CREATE INDEX loans_status ON loans (status);
CREATE INDEX loans_status_date ON loans (status_date);
CREATE INDEX loans_updated ON loans (updated);
CREATE INDEX loans_closing ON loans (estimated_closing_date);

CREATE TABLE los_status_history (
    loan_id     TEXT NOT NULL,
    status      TEXT NOT NULL,
    occurred_at BIGINT NOT NULL,
    PRIMARY KEY (loan_id, status, occurred_at)
);
CREATE INDEX los_history_time ON los_status_history (occurred_at);

CREATE TABLE dw_loan_milestones (
    loan_id     TEXT NOT NULL,
    milestone   TEXT NOT NULL,
    occurred_at BIGINT NOT NULL,
    PRIMARY KEY (loan_id, milestone, occurred_at)
);
CREATE INDEX dw_milestones_time ON dw_loan_milestones (occurred_at);

CREATE TABLE dw_deals (
    id         TEXT PRIMARY KEY,
    created_at BIGINT NOT NULL,
    stage      TEXT NOT NULL
);
CREATE INDEX dw_deals_created ON dw_deals (created_at);
