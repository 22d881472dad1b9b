//! The names of the tables the catalog's derived counts live in: a warehouse dataset's counts
//! per period ([`WarehouseCounts`]) and history's period sets ([`HistorySets`]).

/// Names of a warehouse dataset's counts (migrations 0009 and 0011): per period
/// (`period_index`), each key's distinct counted values. Tables and columns as named in the
/// schema, without aliases.
#[derive(Debug, Clone, Copy)]
pub struct WarehouseCounts {
    /// The date-time field whose periods are counted.
    pub instant: &'static str,
    /// The field counted per period.
    pub key: &'static str,
    /// The field whose distinct values are counted.
    pub counted: &'static str,
    /// The counts per calendar month (`year × 12 + month − 1`).
    pub months: &'static str,
    /// The counts per ISO week, numbered from Monday 1969-12-29.
    pub weeks: &'static str,
    /// The counts' column of the count (their key column is named as the rows' `row_key`).
    pub count: &'static str,
    /// The rows themselves, for the partial periods at a window's ends and the import's counts.
    pub rows: &'static str,
    /// A row's instant.
    pub row_instant: &'static str,
    /// A row's key (the field counted per period).
    pub row_key: &'static str,
    /// A row's counted value.
    pub row_counted: &'static str,
}

/// The tables that summarise history per (period, loan) (migration 0005), each aliased `r`
/// with the columns `period_index`, `loan_key`, `status_bits` (the union of the bits of the
/// loan's statuses in the period, `history_keys::status_bit`), `in_snapshot` and the carried
/// loan fields.
#[derive(Debug, Clone, Copy)]
pub struct HistorySets {
    /// The date-time field whose periods the tables hold.
    pub instant: &'static str,
    /// The status field whose bits the tables hold.
    pub status: &'static str,
    /// The loan field each row stands for once.
    pub loan: &'static str,
    /// Calendar months (`year × 12 + month − 1`).
    pub months: &'static str,
    /// ISO weeks, numbered from Monday 1969-12-29.
    pub weeks: &'static str,
    /// Loan fields the rows carry: (field, column).
    pub carried: &'static [(&'static str, &'static str)],
    /// The months' sets of the snapshot's loans counted per (period, set of bits) (schema
    /// v7): `loans`, and for each carried field its count, sum, minimum and maximum.
    pub counted_months: &'static str,
    /// The weeks' sets, counted as [`HistorySets::counted_months`] counts the months'.
    pub counted_weeks: &'static str,
    /// The months' loans of the snapshot counted per (period, status text) (schema v13):
    /// `status`, `loans` and the same columns per carried field as the counted sets'.
    pub status_counted_months: &'static str,
    /// The weeks', counted as [`HistorySets::status_counted_months`] counts the months'.
    pub status_counted_weeks: &'static str,
    /// Each carried field's columns in the counts (of sets and of statuses): [count, sum,
    /// min, max].
    pub counted: &'static [(&'static str, [&'static str; 4])],
    /// The history rows themselves (alias `h`), read for the statuses without a bit of their
    /// own when the raw status is the key (the sets only say that a loan had one).
    pub rows: &'static str,
    /// A history row's status.
    pub row_status: &'static str,
    /// A history row's status bit.
    pub row_bit: &'static str,
    /// A history row's month index (as the months' `period_index`).
    pub row_month: &'static str,
    /// A history row's week index (as the weeks' `period_index`).
    pub row_week: &'static str,
    /// Each person's loans with the loans' sets (schema v15, alias `p`): `person_id`,
    /// `loan_key`, `roles` (`Scope::person_predicate`), the carried fields, and the sets of
    /// every period as JSON pairs `[[period_index, status_bits], ...]`.
    pub person_loans: &'static str,
    /// A person's loan's sets of months.
    pub person_months: &'static str,
    /// A person's loan's sets of weeks.
    pub person_weeks: &'static str,
    /// Loan fields a person's loan row carries: (field, column).
    pub person_carried: &'static [(&'static str, &'static str)],
}
