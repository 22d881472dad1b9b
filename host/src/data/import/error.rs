//! Why an import stopped.

use crate::data::store::DbError;

use super::tables::FILES;

/// Why an import stopped (nothing of it was kept).
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// A line failed validation.
    #[error("{file}:{line}: {reason}")]
    Line {
        /// File name.
        file: String,
        /// 1-based line number.
        line: u64,
        /// What is wrong, naming the field.
        reason: String,
    },
    /// The folder or a file could not be read.
    #[error("{0}")]
    Io(String),
    /// No known file in the folder.
    #[error("{0}: none of {files} is there", files = FILES.join(", "))]
    NoFiles(String),
    /// The database refused a write.
    #[error(transparent)]
    Db(#[from] DbError),
}
