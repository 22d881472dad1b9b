//! Bound parameters (never SQL text) and how each output column decodes.

use super::ir::{QueryError, Value};
use crate::data::catalog::FieldType;
use crate::data::history_keys::week_label;
use crate::data::values::{format_decimal, format_instant};

/// A bound parameter.
#[derive(Debug, Clone)]
pub(super) enum P {
    T(String),
    I(i64),
}

impl rusqlite::ToSql for P {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        match self {
            P::T(s) => s.to_sql(),
            P::I(i) => i.to_sql(),
        }
    }
}

/// How an output column is decoded.
#[derive(Debug, Clone, Copy)]
pub(super) enum Out {
    Text,
    Int,
    Instant,
    Decimal,
    /// A week index (`history_keys::week_index`), labelled `2026-W09` here ([`week_label`])
    /// rather than by the engine: the engines' formatting of a few thousand groups cost more
    /// than their grouping.
    Week,
}

impl Out {
    /// The value of an integer in a column of this kind (epoch ms, scaled decimal, integer).
    pub(super) fn of_integer(self, n: i64) -> Value {
        match self {
            Out::Instant => Value::Timestamp(format_instant(n)),
            Out::Decimal => Value::Decimal(format_decimal(i128::from(n))),
            Out::Week => Value::Text(week_label(n)),
            Out::Int | Out::Text => Value::Integer(n),
        }
    }
}

/// A result column the engine returned in a form its kind does not allow.
pub(super) fn undecodable(column: usize, what: &dyn std::fmt::Display) -> QueryError {
    tracing::error!(column, %what, "cannot decode a result column");
    QueryError::Unavailable("the data store returned an unexpected value".into())
}

pub(super) fn out_of(ty: FieldType) -> Out {
    match ty {
        FieldType::Text => Out::Text,
        FieldType::Instant => Out::Instant,
        FieldType::Decimal => Out::Decimal,
    }
}
