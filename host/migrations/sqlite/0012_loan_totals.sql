-- Schema v11 (SQLite): the snapshot's totals. An organisation-wide `report_loans` without a
-- filter read every loan: 60-300 ms at 1M loans for a few dozen groups (docs/benchmarks.md,
-- "The moonshot"), within a tenth of its hand-written SQL but never within 30 ms, and the
-- runs' spread put a dozen such lines over 1.1 x their SQL in every run. These tables keep,
-- per value of one group key of the loans (a status, a loan type, a purpose, an officer or a
-- referrer with the name the loans give them, the month index of each stored date), how many
-- loans hold it and each amount's count, sum, minimum and maximum: the partial aggregates the
-- pre-aggregated plan computes, computed ahead (docs/decisions.md, "Schema v11"). The import
-- counts again every key value a loan it writes had or takes, before it commits. Converts in
-- place: counted here.


CREATE TABLE loan_totals_status (
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
CREATE INDEX loan_totals_status_key ON loan_totals_status (status);
INSERT INTO loan_totals_status
    SELECT status,
        COUNT(*),
        COUNT(loan_amount), SUM(loan_amount), MIN(loan_amount), MAX(loan_amount),
        COUNT(locked_compensation), SUM(locked_compensation), MIN(locked_compensation), MAX(locked_compensation),
        COUNT(estimated_compensation), SUM(estimated_compensation), MIN(estimated_compensation), MAX(estimated_compensation)
    FROM loans GROUP BY status;

CREATE TABLE loan_totals_type (
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
CREATE INDEX loan_totals_type_key ON loan_totals_type (loan_type);
INSERT INTO loan_totals_type
    SELECT loan_type,
        COUNT(*),
        COUNT(loan_amount), SUM(loan_amount), MIN(loan_amount), MAX(loan_amount),
        COUNT(locked_compensation), SUM(locked_compensation), MIN(locked_compensation), MAX(locked_compensation),
        COUNT(estimated_compensation), SUM(estimated_compensation), MIN(estimated_compensation), MAX(estimated_compensation)
    FROM loans GROUP BY loan_type;

CREATE TABLE loan_totals_purpose (
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
CREATE INDEX loan_totals_purpose_key ON loan_totals_purpose (purpose);
INSERT INTO loan_totals_purpose
    SELECT purpose,
        COUNT(*),
        COUNT(loan_amount), SUM(loan_amount), MIN(loan_amount), MAX(loan_amount),
        COUNT(locked_compensation), SUM(locked_compensation), MIN(locked_compensation), MAX(locked_compensation),
        COUNT(estimated_compensation), SUM(estimated_compensation), MIN(estimated_compensation), MAX(estimated_compensation)
    FROM loans GROUP BY purpose;

CREATE TABLE loan_totals_officer (
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
CREATE INDEX loan_totals_officer_key ON loan_totals_officer (loan_officer_id);
INSERT INTO loan_totals_officer
    SELECT loan_officer_id, loan_officer_name,
        COUNT(*),
        COUNT(loan_amount), SUM(loan_amount), MIN(loan_amount), MAX(loan_amount),
        COUNT(locked_compensation), SUM(locked_compensation), MIN(locked_compensation), MAX(locked_compensation),
        COUNT(estimated_compensation), SUM(estimated_compensation), MIN(estimated_compensation), MAX(estimated_compensation)
    FROM loans GROUP BY loan_officer_id, loan_officer_name;

CREATE TABLE loan_totals_referrer (
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
CREATE INDEX loan_totals_referrer_key ON loan_totals_referrer (referring_agent_id);
INSERT INTO loan_totals_referrer
    SELECT referring_agent_id, referring_agent_name,
        COUNT(*),
        COUNT(loan_amount), SUM(loan_amount), MIN(loan_amount), MAX(loan_amount),
        COUNT(locked_compensation), SUM(locked_compensation), MIN(locked_compensation), MAX(locked_compensation),
        COUNT(estimated_compensation), SUM(estimated_compensation), MIN(estimated_compensation), MAX(estimated_compensation)
    FROM loans GROUP BY referring_agent_id, referring_agent_name;

CREATE TABLE loan_totals_status_months (
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
CREATE INDEX loan_totals_status_months_key ON loan_totals_status_months (status_month);
INSERT INTO loan_totals_status_months
    SELECT status_month,
        COUNT(*),
        COUNT(loan_amount), SUM(loan_amount), MIN(loan_amount), MAX(loan_amount),
        COUNT(locked_compensation), SUM(locked_compensation), MIN(locked_compensation), MAX(locked_compensation),
        COUNT(estimated_compensation), SUM(estimated_compensation), MIN(estimated_compensation), MAX(estimated_compensation)
    FROM loans GROUP BY status_month;

CREATE TABLE loan_totals_closing_months (
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
CREATE INDEX loan_totals_closing_months_key ON loan_totals_closing_months (estimated_closing_month);
INSERT INTO loan_totals_closing_months
    SELECT estimated_closing_month,
        COUNT(*),
        COUNT(loan_amount), SUM(loan_amount), MIN(loan_amount), MAX(loan_amount),
        COUNT(locked_compensation), SUM(locked_compensation), MIN(locked_compensation), MAX(locked_compensation),
        COUNT(estimated_compensation), SUM(estimated_compensation), MIN(estimated_compensation), MAX(estimated_compensation)
    FROM loans GROUP BY estimated_closing_month;

CREATE TABLE loan_totals_updated_months (
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
CREATE INDEX loan_totals_updated_months_key ON loan_totals_updated_months (updated_month);
INSERT INTO loan_totals_updated_months
    SELECT updated_month,
        COUNT(*),
        COUNT(loan_amount), SUM(loan_amount), MIN(loan_amount), MAX(loan_amount),
        COUNT(locked_compensation), SUM(locked_compensation), MIN(locked_compensation), MAX(locked_compensation),
        COUNT(estimated_compensation), SUM(estimated_compensation), MIN(estimated_compensation), MAX(estimated_compensation)
    FROM loans GROUP BY updated_month;
