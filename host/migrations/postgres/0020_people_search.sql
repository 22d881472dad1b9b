-- Schema v20: the people of the snapshot's loans as `search_users` reads them for an
-- organisation-wide caller (`people_search`) and for a company's (`people_company_search`):
-- per person the parts they play (the bits of `data::people::Part`), their name (the
-- directory's, else the loans'), and that name in lower case, which name tokens match. Built
-- from the totals keyed by each part (migrations 0012, 0013, 0018); the import writes again the
-- rows of the people its loans left or took, and every row when the directory or a whole
-- snapshot was imported (`import::people`). A search then reads an index in name order and
-- stops at its limit instead of grouping thousands of rows of four tables on every call.
-- Its indexes order names and ids by their bytes (`COLLATE "C"`), as the search orders them on both engines. Converts in place: built here.

CREATE TABLE people_search (
    id          TEXT NOT NULL PRIMARY KEY,
    parts       BIGINT NOT NULL,
    name        TEXT,
    name_lower  TEXT NOT NULL
);
CREATE INDEX people_search_name ON people_search (name COLLATE "C", id COLLATE "C");
CREATE INDEX people_search_id ON people_search (id COLLATE "C");

CREATE TABLE people_company_search (
    company_id  TEXT NOT NULL,
    id          TEXT NOT NULL,
    parts       BIGINT NOT NULL,
    name        TEXT,
    name_lower  TEXT NOT NULL,
    PRIMARY KEY (company_id, id)
);
CREATE INDEX people_company_search_name ON people_company_search (company_id, name COLLATE "C", id COLLATE "C");
CREATE INDEX people_company_search_id ON people_company_search (company_id, id COLLATE "C");
CREATE INDEX people_company_search_person ON people_company_search (id);

INSERT INTO people_search (id, parts, name, name_lower)
SELECT id, parts, name, LOWER(COALESCE(name, '')) FROM (
    SELECT g.id AS id, g.parts AS parts,
        CASE WHEN a.first_name IS NOT NULL OR a.last_name IS NOT NULL
            THEN TRIM(COALESCE(a.first_name, '') || ' ' || COALESCE(a.last_name, ''))
            ELSE g.loan_name END AS name
    FROM (
        SELECT id, CAST(SUM(DISTINCT part) AS BIGINT) AS parts, MAX(name) AS loan_name FROM (
            SELECT loan_officer_id AS id, loan_officer_name AS name, 1 AS part
                FROM loan_totals_officer WHERE loan_officer_id IS NOT NULL
            UNION ALL SELECT loan_assistant_id, CAST(NULL AS TEXT), 2
                FROM loan_totals_assistant WHERE loan_assistant_id IS NOT NULL
            UNION ALL SELECT processor_id, processor_name, 8
                FROM loan_totals_processor WHERE processor_id IS NOT NULL
            UNION ALL SELECT referring_agent_id, referring_agent_name, 4
                FROM loan_totals_referrer WHERE referring_agent_id IS NOT NULL
        ) c GROUP BY id
    ) g LEFT JOIN agents a ON a.id = g.id
) x;

INSERT INTO people_company_search (company_id, id, parts, name, name_lower)
SELECT company_id, id, parts, name, LOWER(COALESCE(name, '')) FROM (
    SELECT g.company_id AS company_id, g.id AS id, g.parts AS parts,
        CASE WHEN a.first_name IS NOT NULL OR a.last_name IS NOT NULL
            THEN TRIM(COALESCE(a.first_name, '') || ' ' || COALESCE(a.last_name, ''))
            ELSE g.loan_name END AS name
    FROM (
        SELECT company_id, id, CAST(SUM(DISTINCT part) AS BIGINT) AS parts, MAX(name) AS loan_name FROM (
            SELECT company_id, loan_officer_id AS id, loan_officer_name AS name, 1 AS part
                FROM loan_company_totals_officer WHERE loan_officer_id IS NOT NULL AND company_id IS NOT NULL
            UNION ALL SELECT company_id, loan_assistant_id, CAST(NULL AS TEXT), 2
                FROM loan_company_totals_assistant WHERE loan_assistant_id IS NOT NULL AND company_id IS NOT NULL
            UNION ALL SELECT company_id, processor_id, processor_name, 8
                FROM loan_company_totals_processor WHERE processor_id IS NOT NULL AND company_id IS NOT NULL
            UNION ALL SELECT company_id, referring_agent_id, referring_agent_name, 4
                FROM loan_company_totals_referrer WHERE referring_agent_id IS NOT NULL AND company_id IS NOT NULL
        ) c GROUP BY company_id, id
    ) g LEFT JOIN agents a ON a.id = g.id
) x;
