//! The IR: what a plugin may ask for (the `data` capability's WIT types map onto it), what it
//! gets back, and how a query is refused.

use crate::data::catalog::Dataset;

/// A typed value, in predicates and in result rows.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// NULL.
    Null,
    /// A boolean.
    Boolean(bool),
    /// A whole number.
    Integer(i64),
    /// An exact decimal (plain string).
    Decimal(String),
    /// Text.
    Text(String),
    /// An RFC 3339 instant.
    Timestamp(String),
}

/// A comparison.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// `=`.
    Eq(Value),
    /// `<>`.
    Ne(Value),
    /// `<`.
    Lt(Value),
    /// `<=`.
    Le(Value),
    /// `>`.
    Gt(Value),
    /// `>=`.
    Ge(Value),
    /// `IN (…)`.
    AnyOf(Vec<Value>),
    /// `IS NULL`.
    IsNull,
    /// `IS NOT NULL`.
    IsNotNull,
}

/// A date truncation unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeriodUnit {
    /// `YYYY-Wnn` (ISO week).
    Week,
    /// `YYYY-MM`.
    Month,
    /// `YYYY-Qn`.
    Quarter,
    /// `YYYY`.
    Year,
}

/// A group-by key.
#[derive(Debug, Clone, PartialEq)]
pub enum Key {
    /// A field as is.
    Field(String),
    /// The UTC period of a date-time field.
    Period(String, PeriodUnit),
    /// A value→label mapping of a field: (field, pairs, otherwise).
    Mapped(String, Vec<(String, String)>, Option<String>),
}

/// An aggregate.
#[derive(Debug, Clone, PartialEq)]
pub enum Aggregate {
    /// Rows.
    Count,
    /// Non-null values.
    CountOf(String),
    /// Distinct non-null values.
    CountDistinct(String),
    /// Exact sum.
    Sum(String),
    /// Minimum.
    Min(String),
    /// Maximum.
    Max(String),
}

impl Aggregate {
    /// The field the aggregate reads (`None` for a row count).
    pub fn field(&self) -> Option<&str> {
        match self {
            Aggregate::Count => None,
            Aggregate::CountOf(f)
            | Aggregate::CountDistinct(f)
            | Aggregate::Sum(f)
            | Aggregate::Min(f)
            | Aggregate::Max(f) => Some(f),
        }
    }
}

/// A structured query.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// The dataset.
    pub dataset: Dataset,
    /// The spec's filter object (JSON text).
    pub filter: Option<String>,
    /// AND-ed predicates.
    pub predicates: Vec<(String, Condition)>,
    /// Group-by keys.
    pub group_by: Vec<Key>,
    /// Distinct-on field.
    pub distinct_on: Option<String>,
    /// Aggregates.
    pub aggregates: Vec<Aggregate>,
    /// (output column, descending).
    pub order_by: Vec<(u32, bool)>,
    /// Row limit.
    pub limit: Option<u32>,
}

/// Query results.
#[derive(Debug, Clone, PartialEq)]
pub struct Rows {
    /// Output column names.
    pub columns: Vec<String>,
    /// Rows.
    pub rows: Vec<Vec<Value>>,
    /// Cut by the limit or cap.
    pub truncated: bool,
    /// Groups before the limit.
    pub total_groups: u64,
    /// Bytes of decoded values delivered.
    pub bytes: u64,
    /// When the groups were cut by the limit and the query's aggregates add up across them:
    /// the row that answers the query without its keys (NULL keys, then its aggregates over
    /// every group), which [`super::statement::answer_from_totals`] turns into that query's answer.
    pub totals: Option<Vec<Value>>,
}

/// Why a query was not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// A field the caller may not read.
    #[error("{0}")]
    Denied(String),
    /// A malformed query or filter.
    #[error("{0}")]
    Invalid(String),
    /// The store failed.
    #[error("{0}")]
    Unavailable(String),
    /// The statement was stopped at its deadline.
    #[error("{0}")]
    Timeout(String),
    /// The result exceeded the rows or bytes the caller allowed.
    #[error("{0}")]
    TooLarge(String),
}
