//! `loan:reporting/data`: structured queries. Checks that the dataset exists and that the
//! plugin's manifest grants it, resolves the caller's scope from the database for
//! caller-scoped datasets (on every call), and hands the query to the compiler in
//! `crate::data::query`. Refusals are values the guest sees; nothing here traps.

use crate::data::catalog::Dataset;
use crate::data::query::{self, Aggregate, Condition, Key, PeriodUnit, Query, QueryError, Value};
use crate::data::scope::Scope;
use crate::plugins::bindings::data as wit;
use crate::plugins::bindings::data::{DataError, Host, Rows};
use crate::plugins::state::PluginState;

impl Host for PluginState {
    async fn run(&mut self, q: wit::Query) -> wasmtime::Result<Result<Rows, DataError>> {
        let Some(call) = self.call.as_ref() else {
            return Err(super::no_call_in_describe("data.run"));
        };
        let Some(dataset) = Dataset::parse(&q.dataset) else {
            return Ok(Err(DataError::InvalidQuery(format!(
                "unknown dataset `{}`; known: {}",
                q.dataset,
                Dataset::ALL.map(|d| d.as_str()).join(", ")
            ))));
        };
        if !self.manifest.grants(dataset) {
            return Ok(Err(DataError::Denied(format!(
                "dataset `{}` is not granted to plugin `{}`",
                dataset.as_str(),
                self.manifest.name
            ))));
        }
        let Some(db) = self.db.clone() else {
            return Ok(Err(DataError::Unavailable(format!(
                "dataset `{}` has no data store here",
                dataset.as_str()
            ))));
        };
        let identity = call.identity.clone();
        let scope = if dataset.is_org_wide() {
            None
        } else {
            match Scope::resolve(&db, &identity).await {
                Ok(s) => Some(s),
                Err(e) => {
                    tracing::error!(error = %e, "cannot resolve the caller's scope");
                    return Ok(Err(DataError::Unavailable(
                        "the caller's scope could not be resolved".into(),
                    )));
                }
            }
        };
        let host_query = convert(dataset, q);
        Ok(
            match query::run(&db, &host_query, scope.as_ref(), identity.can_read_names()).await {
                Ok(rows) => Ok(Rows {
                    columns: rows.columns,
                    rows: rows
                        .rows
                        .into_iter()
                        .map(|r| r.into_iter().map(to_wit).collect())
                        .collect(),
                    truncated: rows.truncated,
                    total_groups: rows.total_groups,
                }),
                Err(QueryError::Denied(m)) => Err(DataError::Denied(m)),
                Err(QueryError::Invalid(m)) => Err(DataError::InvalidQuery(m)),
                Err(QueryError::Unavailable(m)) => Err(DataError::Unavailable(m)),
            },
        )
    }
}

fn convert(dataset: Dataset, q: wit::Query) -> Query {
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

fn condition(c: wit::Condition) -> Condition {
    match c {
        wit::Condition::Eq(v) => Condition::Eq(from_wit(v)),
        wit::Condition::Ne(v) => Condition::Ne(from_wit(v)),
        wit::Condition::Lt(v) => Condition::Lt(from_wit(v)),
        wit::Condition::Le(v) => Condition::Le(from_wit(v)),
        wit::Condition::Gt(v) => Condition::Gt(from_wit(v)),
        wit::Condition::Ge(v) => Condition::Ge(from_wit(v)),
        wit::Condition::AnyOf(vs) => Condition::AnyOf(vs.into_iter().map(from_wit).collect()),
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

fn to_wit(v: Value) -> wit::Value {
    match v {
        Value::Null => wit::Value::Null,
        Value::Boolean(b) => wit::Value::Boolean(b),
        Value::Integer(i) => wit::Value::Integer(i),
        Value::Decimal(s) => wit::Value::Decimal(s),
        Value::Text(s) => wit::Value::Text(s),
        Value::Timestamp(s) => wit::Value::Timestamp(s),
    }
}
