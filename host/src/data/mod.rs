//! Data access: the datasets, the stores behind them, and the structured query capability
//! plugins use. Owns SQL; plugins never see it.

pub mod admission;
pub mod agents;
mod application_fields;
pub mod audit_anchors;
mod capability_fields;
pub mod catalog;
mod catalog_tables;
pub mod cursor;
pub mod directory;
pub mod exposure;
pub mod field_reference;
pub mod fleet_budgets;
pub mod grant;
pub mod history_keys;
pub mod import;
pub mod licensing;
pub mod notices;
pub mod people;
pub mod pricing;
pub mod query;
pub mod report_store;
pub mod scope;
pub mod seed;
pub mod store;
pub mod totals;
pub mod values;
mod wal_index;

pub use admission::Reports;
pub use agents::{Agent, NewAgent};
pub use report_store::ReportStore;
pub use store::{Db, DbError};

/// The test PostgreSQL's URL (`make test` sets it from `scripts/postgres.sh`).
#[cfg(test)]
pub(crate) fn test_postgres_url() -> String {
    std::env::var("TEST_POSTGRES_URL")
        .expect("TEST_POSTGRES_URL is not set: run `make test` (scripts/postgres.sh)")
}
