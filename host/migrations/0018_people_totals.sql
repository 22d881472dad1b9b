-- Schema v18 (both engines): the snapshot's totals keyed by a loan's assistant and by its
-- processor, over the whole snapshot and per company, as migrations 0012 and 0013 keep them for
-- its officer and its referrer (the same columns; `data::totals::TOTALS` names all ten tables,
-- the import counts them again as it counts those). `search_users` reads the people on the
-- loans of a caller's scope from these four key tables (docs/design.md, "People"): an
-- organisation's or a company's people are a few thousand rows of these tables instead of a
-- pass over a million loans. Report plans that group by an assistant or a processor read them
-- as they read the officer's. Converts in place: counted here.

CREATE TABLE loan_totals_assistant (
    loan_assistant_id              TEXT,
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
CREATE INDEX loan_totals_assistant_key ON loan_totals_assistant (loan_assistant_id);
INSERT INTO loan_totals_assistant
    SELECT loan_assistant_id,
        COUNT(*),
        COUNT(loan_amount), SUM(loan_amount), MIN(loan_amount), MAX(loan_amount),
        COUNT(locked_compensation), SUM(locked_compensation), MIN(locked_compensation), MAX(locked_compensation),
        COUNT(estimated_compensation), SUM(estimated_compensation), MIN(estimated_compensation), MAX(estimated_compensation)
    FROM loans GROUP BY loan_assistant_id;

CREATE TABLE loan_company_totals_assistant (
    company_id                     TEXT,
    loan_assistant_id              TEXT,
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
CREATE INDEX loan_company_totals_assistant_company ON loan_company_totals_assistant (company_id, loan_assistant_id);
CREATE INDEX loan_company_totals_assistant_key ON loan_company_totals_assistant (loan_assistant_id);
INSERT INTO loan_company_totals_assistant
    SELECT company_id, loan_assistant_id,
        COUNT(*),
        COUNT(loan_amount), SUM(loan_amount), MIN(loan_amount), MAX(loan_amount),
        COUNT(locked_compensation), SUM(locked_compensation), MIN(locked_compensation), MAX(locked_compensation),
        COUNT(estimated_compensation), SUM(estimated_compensation), MIN(estimated_compensation), MAX(estimated_compensation)
    FROM loans GROUP BY company_id, loan_assistant_id;

CREATE TABLE loan_totals_processor (
    processor_id                   TEXT,
    processor_name                 TEXT,
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
CREATE INDEX loan_totals_processor_key ON loan_totals_processor (processor_id);
INSERT INTO loan_totals_processor
    SELECT processor_id, processor_name,
        COUNT(*),
        COUNT(loan_amount), SUM(loan_amount), MIN(loan_amount), MAX(loan_amount),
        COUNT(locked_compensation), SUM(locked_compensation), MIN(locked_compensation), MAX(locked_compensation),
        COUNT(estimated_compensation), SUM(estimated_compensation), MIN(estimated_compensation), MAX(estimated_compensation)
    FROM loans GROUP BY processor_id, processor_name;

CREATE TABLE loan_company_totals_processor (
    company_id                     TEXT,
    processor_id                   TEXT,
    processor_name                 TEXT,
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
CREATE INDEX loan_company_totals_processor_company ON loan_company_totals_processor (company_id, processor_id, processor_name);
CREATE INDEX loan_company_totals_processor_key ON loan_company_totals_processor (processor_id);
INSERT INTO loan_company_totals_processor
    SELECT company_id, processor_id, processor_name,
        COUNT(*),
        COUNT(loan_amount), SUM(loan_amount), MIN(loan_amount), MAX(loan_amount),
        COUNT(locked_compensation), SUM(locked_compensation), MIN(locked_compensation), MAX(locked_compensation),
        COUNT(estimated_compensation), SUM(estimated_compensation), MIN(estimated_compensation), MAX(estimated_compensation)
    FROM loans GROUP BY company_id, processor_id, processor_name;
