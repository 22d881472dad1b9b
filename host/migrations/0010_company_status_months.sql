-- Schema v9 (both engines): a company's loans by status month, with the money a month's
-- aggregates read. A Processor's pipeline trend (a few whole months of one company's loans)
-- read the company's every loan through `loans_company` and checked each one's status date:
-- 64-70 ms at 1M loans on PostgreSQL, where a range of this index is a few thousand entries
-- (docs/decisions.md, "The host's cost per result row"). The compiler writes such a window as
-- bounds on `status_month` (`Compiler::predicate`). Converts in place: only an index.
CREATE INDEX loans_company_status_months ON loans
    (company_id, status_month, loan_amount, locked_compensation, estimated_compensation);
