-- Schema v12 (both engines): the snapshot's totals per company. A Processor's `report_loans` (one
-- company's loans, ~20k of 1M) read the company's loans through `loans_company`: 3-90 ms at 1M
-- loans, and the runs' spread put 20-40 such lines a run over 1.1 x their SQL + 1 ms
-- (docs/benchmarks.md, "Runs R and S"). These tables keep schema v11's totals (migration
-- 0012) per company as well: per company and value of one group key, how many of the
-- company's loans hold it and each amount's count, sum, minimum and maximum. The import counts
-- them again for every key value a loan it writes had or takes, and the organisation's totals
-- from them (docs/decisions.md, "Schema v12"). Converts in place: counted here.


CREATE TABLE loan_company_totals_status (
    company_id                     TEXT,
    status                         TEXT,
    loans                          BIGINT NOT NULL,
    loan_amount_count              BIGINT NOT NULL,
    loan_amount_sum                BIGINT,
    loan_amount_min                BIGINT,
    loan_amount_max                BIGINT,
    locked_compensation_count      BIGINT NOT NULL,
    locked_compensation_sum        BIGINT,
    locked_compensation_min        BIGINT,
    locked_compensation_max        BIGINT,
    estimated_compensation_count   BIGINT NOT NULL,
    estimated_compensation_sum     BIGINT,
    estimated_compensation_min     BIGINT,
    estimated_compensation_max     BIGINT
);
CREATE INDEX loan_company_totals_status_company ON loan_company_totals_status (company_id, status);
CREATE INDEX loan_company_totals_status_key ON loan_company_totals_status (status);
INSERT INTO loan_company_totals_status
    SELECT company_id, status,
        COUNT(*),
        COUNT(loan_amount), SUM(loan_amount), MIN(loan_amount), MAX(loan_amount),
        COUNT(locked_compensation), SUM(locked_compensation), MIN(locked_compensation), MAX(locked_compensation),
        COUNT(estimated_compensation), SUM(estimated_compensation), MIN(estimated_compensation), MAX(estimated_compensation)
    FROM loans GROUP BY company_id, status;

CREATE TABLE loan_company_totals_type (
    company_id                     TEXT,
    loan_type                      TEXT,
    loans                          BIGINT NOT NULL,
    loan_amount_count              BIGINT NOT NULL,
    loan_amount_sum                BIGINT,
    loan_amount_min                BIGINT,
    loan_amount_max                BIGINT,
    locked_compensation_count      BIGINT NOT NULL,
    locked_compensation_sum        BIGINT,
    locked_compensation_min        BIGINT,
    locked_compensation_max        BIGINT,
    estimated_compensation_count   BIGINT NOT NULL,
    estimated_compensation_sum     BIGINT,
    estimated_compensation_min     BIGINT,
    estimated_compensation_max     BIGINT
);
CREATE INDEX loan_company_totals_type_company ON loan_company_totals_type (company_id, loan_type);
CREATE INDEX loan_company_totals_type_key ON loan_company_totals_type (loan_type);
INSERT INTO loan_company_totals_type
    SELECT company_id, loan_type,
        COUNT(*),
        COUNT(loan_amount), SUM(loan_amount), MIN(loan_amount), MAX(loan_amount),
        COUNT(locked_compensation), SUM(locked_compensation), MIN(locked_compensation), MAX(locked_compensation),
        COUNT(estimated_compensation), SUM(estimated_compensation), MIN(estimated_compensation), MAX(estimated_compensation)
    FROM loans GROUP BY company_id, loan_type;

CREATE TABLE loan_company_totals_purpose (
    company_id                     TEXT,
    purpose                        TEXT,
    loans                          BIGINT NOT NULL,
    loan_amount_count              BIGINT NOT NULL,
    loan_amount_sum                BIGINT,
    loan_amount_min                BIGINT,
    loan_amount_max                BIGINT,
    locked_compensation_count      BIGINT NOT NULL,
    locked_compensation_sum        BIGINT,
    locked_compensation_min        BIGINT,
    locked_compensation_max        BIGINT,
    estimated_compensation_count   BIGINT NOT NULL,
    estimated_compensation_sum     BIGINT,
    estimated_compensation_min     BIGINT,
    estimated_compensation_max     BIGINT
);
CREATE INDEX loan_company_totals_purpose_company ON loan_company_totals_purpose (company_id, purpose);
CREATE INDEX loan_company_totals_purpose_key ON loan_company_totals_purpose (purpose);
INSERT INTO loan_company_totals_purpose
    SELECT company_id, purpose,
        COUNT(*),
        COUNT(loan_amount), SUM(loan_amount), MIN(loan_amount), MAX(loan_amount),
        COUNT(locked_compensation), SUM(locked_compensation), MIN(locked_compensation), MAX(locked_compensation),
        COUNT(estimated_compensation), SUM(estimated_compensation), MIN(estimated_compensation), MAX(estimated_compensation)
    FROM loans GROUP BY company_id, purpose;

CREATE TABLE loan_company_totals_officer (
    company_id                     TEXT,
    loan_officer_id                TEXT,
    loan_officer_name              TEXT,
    loans                          BIGINT NOT NULL,
    loan_amount_count              BIGINT NOT NULL,
    loan_amount_sum                BIGINT,
    loan_amount_min                BIGINT,
    loan_amount_max                BIGINT,
    locked_compensation_count      BIGINT NOT NULL,
    locked_compensation_sum        BIGINT,
    locked_compensation_min        BIGINT,
    locked_compensation_max        BIGINT,
    estimated_compensation_count   BIGINT NOT NULL,
    estimated_compensation_sum     BIGINT,
    estimated_compensation_min     BIGINT,
    estimated_compensation_max     BIGINT
);
CREATE INDEX loan_company_totals_officer_company ON loan_company_totals_officer (company_id, loan_officer_id, loan_officer_name);
CREATE INDEX loan_company_totals_officer_key ON loan_company_totals_officer (loan_officer_id);
INSERT INTO loan_company_totals_officer
    SELECT company_id, loan_officer_id, loan_officer_name,
        COUNT(*),
        COUNT(loan_amount), SUM(loan_amount), MIN(loan_amount), MAX(loan_amount),
        COUNT(locked_compensation), SUM(locked_compensation), MIN(locked_compensation), MAX(locked_compensation),
        COUNT(estimated_compensation), SUM(estimated_compensation), MIN(estimated_compensation), MAX(estimated_compensation)
    FROM loans GROUP BY company_id, loan_officer_id, loan_officer_name;

CREATE TABLE loan_company_totals_referrer (
    company_id                     TEXT,
    referring_agent_id             TEXT,
    referring_agent_name           TEXT,
    loans                          BIGINT NOT NULL,
    loan_amount_count              BIGINT NOT NULL,
    loan_amount_sum                BIGINT,
    loan_amount_min                BIGINT,
    loan_amount_max                BIGINT,
    locked_compensation_count      BIGINT NOT NULL,
    locked_compensation_sum        BIGINT,
    locked_compensation_min        BIGINT,
    locked_compensation_max        BIGINT,
    estimated_compensation_count   BIGINT NOT NULL,
    estimated_compensation_sum     BIGINT,
    estimated_compensation_min     BIGINT,
    estimated_compensation_max     BIGINT
);
CREATE INDEX loan_company_totals_referrer_company ON loan_company_totals_referrer (company_id, referring_agent_id, referring_agent_name);
CREATE INDEX loan_company_totals_referrer_key ON loan_company_totals_referrer (referring_agent_id);
INSERT INTO loan_company_totals_referrer
    SELECT company_id, referring_agent_id, referring_agent_name,
        COUNT(*),
        COUNT(loan_amount), SUM(loan_amount), MIN(loan_amount), MAX(loan_amount),
        COUNT(locked_compensation), SUM(locked_compensation), MIN(locked_compensation), MAX(locked_compensation),
        COUNT(estimated_compensation), SUM(estimated_compensation), MIN(estimated_compensation), MAX(estimated_compensation)
    FROM loans GROUP BY company_id, referring_agent_id, referring_agent_name;

CREATE TABLE loan_company_totals_status_months (
    company_id                     TEXT,
    status_month                   INTEGER,
    loans                          BIGINT NOT NULL,
    loan_amount_count              BIGINT NOT NULL,
    loan_amount_sum                BIGINT,
    loan_amount_min                BIGINT,
    loan_amount_max                BIGINT,
    locked_compensation_count      BIGINT NOT NULL,
    locked_compensation_sum        BIGINT,
    locked_compensation_min        BIGINT,
    locked_compensation_max        BIGINT,
    estimated_compensation_count   BIGINT NOT NULL,
    estimated_compensation_sum     BIGINT,
    estimated_compensation_min     BIGINT,
    estimated_compensation_max     BIGINT
);
CREATE INDEX loan_company_totals_status_months_company ON loan_company_totals_status_months (company_id, status_month);
CREATE INDEX loan_company_totals_status_months_key ON loan_company_totals_status_months (status_month);
INSERT INTO loan_company_totals_status_months
    SELECT company_id, status_month,
        COUNT(*),
        COUNT(loan_amount), SUM(loan_amount), MIN(loan_amount), MAX(loan_amount),
        COUNT(locked_compensation), SUM(locked_compensation), MIN(locked_compensation), MAX(locked_compensation),
        COUNT(estimated_compensation), SUM(estimated_compensation), MIN(estimated_compensation), MAX(estimated_compensation)
    FROM loans GROUP BY company_id, status_month;

CREATE TABLE loan_company_totals_closing_months (
    company_id                     TEXT,
    estimated_closing_month        INTEGER,
    loans                          BIGINT NOT NULL,
    loan_amount_count              BIGINT NOT NULL,
    loan_amount_sum                BIGINT,
    loan_amount_min                BIGINT,
    loan_amount_max                BIGINT,
    locked_compensation_count      BIGINT NOT NULL,
    locked_compensation_sum        BIGINT,
    locked_compensation_min        BIGINT,
    locked_compensation_max        BIGINT,
    estimated_compensation_count   BIGINT NOT NULL,
    estimated_compensation_sum     BIGINT,
    estimated_compensation_min     BIGINT,
    estimated_compensation_max     BIGINT
);
CREATE INDEX loan_company_totals_closing_months_company ON loan_company_totals_closing_months (company_id, estimated_closing_month);
CREATE INDEX loan_company_totals_closing_months_key ON loan_company_totals_closing_months (estimated_closing_month);
INSERT INTO loan_company_totals_closing_months
    SELECT company_id, estimated_closing_month,
        COUNT(*),
        COUNT(loan_amount), SUM(loan_amount), MIN(loan_amount), MAX(loan_amount),
        COUNT(locked_compensation), SUM(locked_compensation), MIN(locked_compensation), MAX(locked_compensation),
        COUNT(estimated_compensation), SUM(estimated_compensation), MIN(estimated_compensation), MAX(estimated_compensation)
    FROM loans GROUP BY company_id, estimated_closing_month;

CREATE TABLE loan_company_totals_updated_months (
    company_id                     TEXT,
    updated_month                  INTEGER,
    loans                          BIGINT NOT NULL,
    loan_amount_count              BIGINT NOT NULL,
    loan_amount_sum                BIGINT,
    loan_amount_min                BIGINT,
    loan_amount_max                BIGINT,
    locked_compensation_count      BIGINT NOT NULL,
    locked_compensation_sum        BIGINT,
    locked_compensation_min        BIGINT,
    locked_compensation_max        BIGINT,
    estimated_compensation_count   BIGINT NOT NULL,
    estimated_compensation_sum     BIGINT,
    estimated_compensation_min     BIGINT,
    estimated_compensation_max     BIGINT
);
CREATE INDEX loan_company_totals_updated_months_company ON loan_company_totals_updated_months (company_id, updated_month);
CREATE INDEX loan_company_totals_updated_months_key ON loan_company_totals_updated_months (updated_month);
INSERT INTO loan_company_totals_updated_months
    SELECT company_id, updated_month,
        COUNT(*),
        COUNT(loan_amount), SUM(loan_amount), MIN(loan_amount), MAX(loan_amount),
        COUNT(locked_compensation), SUM(locked_compensation), MIN(locked_compensation), MAX(locked_compensation),
        COUNT(estimated_compensation), SUM(estimated_compensation), MIN(estimated_compensation), MAX(estimated_compensation)
    FROM loans GROUP BY company_id, updated_month;
