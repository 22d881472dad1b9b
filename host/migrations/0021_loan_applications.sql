-- Schema v21 (both engines): loan applications (issue #73, decision 0046), imported as
-- `loan_applications.jsonl` and listed through the listing capability as the dataset
-- `loan-applications` (docs/design.md §2, §5). One application per loan of the snapshot, keyed
-- by the loan's integer key (`loan_keys`), so a list pages by the loan's key as every list does
-- and the caller's scope is the loan's.
--
-- The store never holds a borrower's sensitive data: the import refuses a line that carries an
-- SSN, an encrypted SSN, a birth date, HMDA demographics, declarations, credit scores, FICO, a
-- soft-credit id, an asset's account number or `updatedByIp` (decision 0046). The parts of an
-- application are JSON documents validated by the import against the shared models; each is
-- one field of the catalog, so a manifest grants them one by one:
--
-- * `application`: the file's own flags and instants (`losType`, `isSubmitted`,
--   `isLoanEditable`, `isSetupComplete`, `isDeleted`, the stated-income flags, `timestamp`,
--   `createdTimestampUtc`, `updatedTimestampUtc`, `updatedBy`);
-- * `updated_by_name`: who last changed it (email and names: read only by callers who may
--   read names);
-- * `borrower`: the borrower and co-borrower without the sensitive fields (a borrower's
--   name: read only as the snapshot's borrower names are);
-- * `sections`, `tasks`, `documents`, `timeline`: the seven wizard sections, the tasks, the
--   documents and the events;
-- * `contacts`, `referred_by`: the people on the file (names: read only by callers who may
--   read names), and `contact_roles`, the same contacts without names or phones.
--
-- `status` is the file's readiness, computed by the import from its sections and required
-- borrower document tasks by the specification's rules (`Submitted`, `ReadyToSubmit`,
-- `InProgress`); `updated` and `created` are epoch milliseconds.

CREATE TABLE loan_applications (
    loan_key         BIGINT NOT NULL PRIMARY KEY,
    id               TEXT NOT NULL UNIQUE,
    status           TEXT NOT NULL,
    created          BIGINT NOT NULL,
    updated          BIGINT NOT NULL,
    application      TEXT NOT NULL,
    updated_by_name  TEXT NOT NULL,
    borrower         TEXT NOT NULL,
    sections         TEXT NOT NULL,
    tasks            TEXT NOT NULL,
    documents        TEXT NOT NULL,
    timeline         TEXT NOT NULL,
    contacts         TEXT NOT NULL,
    contact_roles    TEXT NOT NULL,
    referred_by      TEXT NOT NULL
);
CREATE INDEX loan_applications_updated ON loan_applications (updated, loan_key);
CREATE INDEX loan_applications_status ON loan_applications (status, updated, loan_key);
