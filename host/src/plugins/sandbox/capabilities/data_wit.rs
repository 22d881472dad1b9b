//! The `data` interface of each `loan:reporting` version: its types turned into the host's
//! query and back ([`super::data`] runs the query), and 1.1.0's `run-json`, the rows as one JSON
//! text with each column's kind.

use std::io::Write as _;

use crate::data::catalog::Dataset;
use crate::data::query::{self, Aggregate, Condition, Key, PeriodUnit, Query, Value};
use crate::plugins::sandbox::bindings::{data as v1_0, v1_1::data as v1_1};
use crate::plugins::sandbox::state::PluginState;

use super::data::Refusal;

/// The conversions between one version's `data` types (`$wit`) and the host's.
macro_rules! conversions {
    ($name:ident, $wit:path) => {
        mod $name {
            use super::{
                query, Aggregate, Condition, Dataset, Key, PeriodUnit, Query, Refusal, Value,
            };
            use $wit as wit;

            pub(super) fn convert(dataset: Dataset, q: wit::Query) -> Query {
                Query {
                    dataset,
                    filter: q.filter,
                    predicates: q
                        .predicates
                        .into_iter()
                        .map(|p| (p.field, condition(p.condition)))
                        .collect(),
                    group_by: q
                        .group_by
                        .into_iter()
                        .map(|k| match k {
                            wit::Key::Field(f) => Key::Field(f),
                            wit::Key::Period((f, u)) => Key::Period(
                                f,
                                match u {
                                    wit::PeriodUnit::Week => PeriodUnit::Week,
                                    wit::PeriodUnit::Month => PeriodUnit::Month,
                                    wit::PeriodUnit::Quarter => PeriodUnit::Quarter,
                                    wit::PeriodUnit::Year => PeriodUnit::Year,
                                },
                            ),
                            wit::Key::Mapped(m) => Key::Mapped(m.field, m.entries, m.otherwise),
                        })
                        .collect(),
                    distinct_on: q.distinct_on,
                    aggregates: q
                        .aggregates
                        .into_iter()
                        .map(|a| match a {
                            wit::Aggregate::Count => Aggregate::Count,
                            wit::Aggregate::CountOf(f) => Aggregate::CountOf(f),
                            wit::Aggregate::CountDistinct(f) => Aggregate::CountDistinct(f),
                            wit::Aggregate::Sum(f) => Aggregate::Sum(f),
                            wit::Aggregate::Min(f) => Aggregate::Min(f),
                            wit::Aggregate::Max(f) => Aggregate::Max(f),
                        })
                        .collect(),
                    order_by: q
                        .order_by
                        .into_iter()
                        .map(|o| (o.column, o.descending))
                        .collect(),
                    limit: q.limit,
                }
            }

            pub(in super::super) fn condition(c: wit::Condition) -> Condition {
                match c {
                    wit::Condition::Eq(v) => Condition::Eq(from_wit(v)),
                    wit::Condition::Ne(v) => Condition::Ne(from_wit(v)),
                    wit::Condition::Lt(v) => Condition::Lt(from_wit(v)),
                    wit::Condition::Le(v) => Condition::Le(from_wit(v)),
                    wit::Condition::Gt(v) => Condition::Gt(from_wit(v)),
                    wit::Condition::Ge(v) => Condition::Ge(from_wit(v)),
                    wit::Condition::AnyOf(vs) => {
                        Condition::AnyOf(vs.into_iter().map(from_wit).collect())
                    }
                    wit::Condition::IsNull => Condition::IsNull,
                    wit::Condition::IsNotNull => Condition::IsNotNull,
                }
            }

            fn from_wit(v: wit::Value) -> Value {
                match v {
                    wit::Value::Null => Value::Null,
                    wit::Value::Boolean(b) => Value::Boolean(b),
                    wit::Value::Integer(i) => Value::Integer(i),
                    wit::Value::Decimal(s) => Value::Decimal(s),
                    wit::Value::Text(s) => Value::Text(s),
                    wit::Value::Timestamp(s) => Value::Timestamp(s),
                }
            }

            pub(in super::super) fn to_wit(v: Value) -> wit::Value {
                match v {
                    Value::Null => wit::Value::Null,
                    Value::Boolean(b) => wit::Value::Boolean(b),
                    Value::Integer(i) => wit::Value::Integer(i),
                    Value::Decimal(s) => wit::Value::Decimal(s),
                    Value::Text(s) => wit::Value::Text(s),
                    Value::Timestamp(s) => wit::Value::Timestamp(s),
                }
            }

            /// The rows in this version's types.
            pub(in super::super) fn rows(rows: query::Rows) -> wit::Rows {
                wit::Rows {
                    columns: rows.columns,
                    rows: rows
                        .rows
                        .into_iter()
                        .map(|r| r.into_iter().map(to_wit).collect())
                        .collect(),
                    truncated: rows.truncated,
                    total_groups: rows.total_groups,
                }
            }

            /// The refusal in this version's types.
            pub(in super::super) fn refusal(r: Refusal) -> wit::DataError {
                match r {
                    Refusal::Denied(m) => wit::DataError::Denied(m),
                    Refusal::InvalidQuery(m) => wit::DataError::InvalidQuery(m),
                    Refusal::Unavailable(m) => wit::DataError::Unavailable(m),
                }
            }
        }
    };
}

conversions!(from_1_0, super::v1_0);
conversions!(from_1_1, super::v1_1);

/// 1.1.0's conditions and values, which 1.2.0's `listing` shares.
pub(super) use from_1_1::{condition as condition_1_1, to_wit as value_1_1};

impl v1_0::Host for PluginState {
    async fn run(
        &mut self,
        q: v1_0::Query,
    ) -> wasmtime::Result<Result<v1_0::Rows, v1_0::DataError>> {
        let name = q.dataset.clone();
        let answer = self.run_query(&name, |d| from_1_0::convert(d, q)).await?;
        Ok(answer.map(from_1_0::rows).map_err(from_1_0::refusal))
    }
}

impl v1_1::Host for PluginState {
    async fn run(
        &mut self,
        q: v1_1::Query,
    ) -> wasmtime::Result<Result<v1_1::Rows, v1_1::DataError>> {
        let name = q.dataset.clone();
        let answer = self.run_query(&name, |d| from_1_1::convert(d, q)).await?;
        Ok(answer.map(from_1_1::rows).map_err(from_1_1::refusal))
    }

    async fn run_json(
        &mut self,
        q: v1_1::Query,
    ) -> wasmtime::Result<Result<v1_1::JsonRows, v1_1::DataError>> {
        let name = q.dataset.clone();
        let answer = self.run_query(&name, |d| from_1_1::convert(d, q)).await?;
        Ok(match answer {
            Ok(rows) => json_rows(rows).map_err(v1_1::DataError::Unavailable),
            Err(r) => Err(from_1_1::refusal(r)),
        })
    }
}

/// The largest integer a JavaScript number holds exactly (2^53 − 1).
const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// `rows` as 1.1.0's `json-rows`. Every column of a query has one kind of value (its field's or
/// its aggregate's); a column of two kinds would be a fault of the query compiler, refused
/// rather than sent with a kind that misdescribes it.
fn json_rows(rows: query::Rows) -> Result<v1_1::JsonRows, String> {
    let (text, kinds) = json_text(rows.columns.len(), &rows.rows, rows.bytes)?;
    Ok(v1_1::JsonRows {
        columns: rows.columns,
        kinds,
        rows: text,
        truncated: rows.truncated,
        total_groups: rows.total_groups,
    })
}

/// Rows of `columns` values as one JSON text (an array of arrays) and each column's kind (a
/// column of nulls only is `text`): what 1.1.0's `json-rows` and 1.2.0's `json-page` carry.
/// `bytes` is the rows' decoded size, as the intake counted it (the text's capacity).
pub(super) fn json_text(
    columns: usize,
    rows: &[Vec<Value>],
    bytes: u64,
) -> Result<(String, Vec<v1_1::ColumnKind>), String> {
    let mut kinds: Vec<Option<v1_1::ColumnKind>> = vec![None; columns];
    // Written as bytes, each string escaped by serde_json straight into them (no string of
    // its own per value); writing into a `Vec` cannot fail.
    let mut text: Vec<u8> = Vec::with_capacity(bytes as usize + 8 * rows.len() + 2);
    text.push(b'[');
    for (r, row) in rows.iter().enumerate() {
        text.extend_from_slice(if r == 0 { b"[" } else { b",[" });
        for (c, value) in row.iter().enumerate() {
            if c > 0 {
                text.push(b',');
            }
            let kind = match value {
                Value::Null => {
                    text.extend_from_slice(b"null");
                    continue;
                }
                Value::Boolean(b) => {
                    text.extend_from_slice(if *b { b"true" } else { b"false" });
                    v1_1::ColumnKind::Boolean
                }
                Value::Integer(i) if (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(i) => {
                    let _ = write!(text, "{i}");
                    v1_1::ColumnKind::Integer
                }
                Value::Integer(i) => {
                    let _ = write!(text, "\"{i}\"");
                    v1_1::ColumnKind::Integer
                }
                Value::Decimal(s) => {
                    let _ = serde_json::to_writer(&mut text, s);
                    v1_1::ColumnKind::Decimal
                }
                Value::Text(s) => {
                    let _ = serde_json::to_writer(&mut text, s);
                    v1_1::ColumnKind::Text
                }
                Value::Timestamp(s) => {
                    let _ = serde_json::to_writer(&mut text, s);
                    v1_1::ColumnKind::Timestamp
                }
            };
            match kinds.get_mut(c) {
                Some(slot @ None) => *slot = Some(kind),
                Some(Some(k)) if *k == kind => {}
                _ => {
                    return Err(format!(
                        "column {c} of the result holds values of two kinds; use `run`"
                    ))
                }
            }
        }
        text.push(b']');
    }
    text.push(b']');
    let kinds = kinds
        .into_iter()
        .map(|k| k.unwrap_or(v1_1::ColumnKind::Text))
        .collect();
    Ok((
        String::from_utf8(text).expect("JSON written from strings is UTF-8"),
        kinds,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(values: Vec<Vec<Value>>) -> query::Rows {
        query::Rows {
            columns: (0..values.first().map_or(0, Vec::len))
                .map(|i| format!("c{i}"))
                .collect(),
            total_groups: values.len() as u64,
            rows: values,
            truncated: false,
            bytes: 0,
            totals: None,
        }
    }

    #[test]
    fn json_rows_keep_every_value_exact_and_name_each_column_kind() {
        // Arrange
        let big = MAX_SAFE_INTEGER + 1;
        let r = rows(vec![
            vec![
                Value::Text("Loan \"Open\"\n".into()),
                Value::Integer(3),
                Value::Decimal("350000.25".into()),
                Value::Timestamp("2026-01-31T17:00:00Z".into()),
                Value::Boolean(true),
                Value::Null,
            ],
            vec![
                Value::Null,
                Value::Integer(big),
                Value::Null,
                Value::Null,
                Value::Boolean(false),
                Value::Null,
            ],
        ]);

        // Act
        let j = json_rows(r).unwrap();

        // Assert
        use v1_1::ColumnKind as K;
        assert_eq!(
            j.kinds,
            [
                K::Text,
                K::Integer,
                K::Decimal,
                K::Timestamp,
                K::Boolean,
                K::Text
            ]
        );
        let parsed: serde_json::Value = serde_json::from_str(&j.rows).unwrap();
        assert_eq!(
            parsed,
            serde_json::json!([
                [
                    "Loan \"Open\"\n",
                    3,
                    "350000.25",
                    "2026-01-31T17:00:00Z",
                    true,
                    null
                ],
                [null, big.to_string(), null, null, false, null]
            ])
        );
    }

    #[test]
    fn json_rows_refuse_a_column_of_two_kinds() {
        // Arrange
        let r = rows(vec![vec![Value::Integer(1)], vec![Value::Text("1".into())]]);

        // Act
        let e = json_rows(r).unwrap_err();

        // Assert
        assert!(e.contains("column 0"), "{e}");
    }

    #[test]
    fn json_rows_of_no_rows_are_an_empty_array() {
        assert_eq!(json_rows(rows(vec![])).unwrap().rows, "[]");
    }
}
