//! What an import writes, shared by its stages: the files in import order, bound values, the
//! rows history adds to its period sets, the tables counted again, and the periods and totals
//! an import leaves stale until they are.

use std::collections::BTreeSet;

use crate::data::catalog::Dataset;
use crate::data::history_keys;

/// The files, in import order.
pub const FILES: [&str; 8] = [
    "agents.jsonl",
    "user_licenses.jsonl",
    "pricing.jsonl",
    "loans.jsonl",
    "los_status_history.jsonl",
    "dw_loan_milestones.jsonl",
    "dw_deals.jsonl",
    "loan_applications.jsonl",
];

/// Rows per multi-row statement (kept under both engines' parameter limits).
pub(super) const BATCH_PARAMS: usize = 30_000;

/// The period sets history rows are summarised in (migration 0005), each with the history
/// column holding its period and the table counting its sets (migration 0008).
pub(super) const HISTORY_SETS: [(&str, &str, &str); 2] = [
    ("los_history_months", "month_index", "los_set_counts_months"),
    ("los_history_weeks", "week_index", "los_set_counts_weeks"),
];

/// The tables counting the snapshot's loans per (period, status text) (migration 0014), in
/// the order of [`HISTORY_SETS`]: counted again with their sets' counts.
pub(super) const STATUS_COUNTS: [&str; 2] = ["los_status_counts_months", "los_status_counts_weeks"];

/// The periods whose counted sets (migration 0008) no longer match their sets, per table of
/// [`HISTORY_SETS`], and the warehouse periods an import wrote rows to, per table of
/// [`WAREHOUSE`] and unit of [`PERIODS`] (migrations 0009 and 0011), and the key values of
/// the snapshot's totals that loans left or took, per table of `totals::TOTALS` (migration
/// 0012): counted again once, before the import commits.
#[derive(Debug, Default)]
pub(super) struct Stale {
    /// Every period (the sets were built anew).
    pub(super) all: bool,
    pub(super) periods: [BTreeSet<i64>; 2],
    pub(super) warehouse: [[BTreeSet<i64>; 2]; 2],
    /// Every total (loans were written into an empty snapshot).
    pub(super) totals_all: bool,
    /// The loans written, or whose history was: their person rows are written again
    /// (schema v15; all of them when `all` or `totals_all`).
    pub(super) loans: BTreeSet<i64>,
    pub(super) totals: [BTreeSet<KeyValue>; crate::data::totals::TOTALS.len()],
    /// Every person's row of the people tables is written again (the directory was imported;
    /// schema v20), not only those of the people `totals` notes.
    pub(super) people_all: bool,
    /// The users whose licences this import replaced (their later lines add to them).
    pub(super) licensed: BTreeSet<String>,
    /// Whether this import emptied the rate sheet (its `pricing.jsonl` replaces it whole).
    pub(super) sheet_replaced: bool,
    /// Rows of the rate sheet written so far (each row's `line`).
    pub(super) sheet_rows: i64,
}

/// A period numbering (months, ISO weeks) and the first instant of a period.
pub(super) type PeriodOf = fn(i64) -> i64;

pub(super) const PERIODS: [(PeriodOf, PeriodOf); 2] = [
    (history_keys::month_index, history_keys::month_start),
    (history_keys::week_index, history_keys::week_start),
];

/// The warehouse datasets the import counts per (period, key) (`Dataset::warehouse_counts`:
/// migrations 0009 and 0011), in the order of [`Stale::warehouse`].
pub(super) const WAREHOUSE: [Dataset; 2] = Dataset::WAREHOUSE_COUNTED;

/// The places of the milestones and the deals in [`WAREHOUSE`].
pub(super) const MILESTONES: usize = 0;

pub(super) const DEALS: usize = 1;

impl Stale {
    /// Marks the periods of `at` stale in the counts of `WAREHOUSE[table]`.
    pub(super) fn warehouse_at(&mut self, table: usize, at: i64) {
        for (periods, (index, _)) in self.warehouse[table].iter_mut().zip(PERIODS) {
            periods.insert(index(at));
        }
    }
}

/// What a history row adds to its period sets.
pub(super) struct SetRow {
    /// Its period in each of [`HISTORY_SETS`], in that order.
    pub(super) periods: [i64; 2],
    pub(super) loan_key: i64,
    pub(super) bit: i64,
    pub(super) amount: Option<i64>,
    pub(super) in_snapshot: i64,
}

/// A bound value.
#[derive(Debug, Clone)]
pub(super) enum V {
    T(Option<String>),
    I(Option<i64>),
}

/// A value of a table of totals' first key column: text, or a month index.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum KeyValue {
    T(Option<String>),
    I(Option<i64>),
}

impl KeyValue {
    pub(super) fn is_null(&self) -> bool {
        matches!(self, KeyValue::T(None) | KeyValue::I(None))
    }

    pub(super) fn bound(&self) -> V {
        match self {
            KeyValue::T(t) => V::T(t.clone()),
            KeyValue::I(i) => V::I(*i),
        }
    }
}
