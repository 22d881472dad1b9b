//! The structured-query compiler: a plugin's query (dataset, filter, predicates, group-by
//! keys, aggregates, order, limit) becomes one parameterized SQL statement for SQLite or
//! PostgreSQL, with the caller's scope always AND-ed in for caller-scoped datasets. Field
//! names map through the dataset's whitelist to fixed column expressions; every value from a
//! plugin or a caller is a bound parameter, never SQL text. Aggregation runs in the database.

use std::time::Duration;

use serde_json::Value as Json;
use sqlx::Row;

use super::catalog::{Dataset, Field, FieldType};
use super::scope::Scope;
use super::store::Db;
use super::values::{format_decimal, format_instant, parse_decimal, parse_instant, parse_uuid};

/// Most rows a query returns, whatever its limit.
pub const ROW_CAP: u32 = 10_000;
/// Longest a statement may run.
pub const STATEMENT_TIMEOUT: Duration = Duration::from_secs(10);

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
    /// The store failed or timed out.
    #[error("{0}")]
    Unavailable(String),
}

/// A bound parameter.
#[derive(Debug, Clone)]
enum P {
    T(String),
    I(i64),
}

/// How an output column is decoded.
#[derive(Debug, Clone, Copy)]
enum Out {
    Text,
    Int,
    Instant,
    Decimal,
}

fn out_of(ty: FieldType) -> Out {
    match ty {
        FieldType::Text => Out::Text,
        FieldType::Instant => Out::Instant,
        FieldType::Decimal => Out::Decimal,
    }
}

struct Compiler {
    dataset: Dataset,
    can_read_names: bool,
    postgres: bool,
    params: Vec<P>,
}

impl Compiler {
    fn field(&self, name: &str) -> Result<Field, QueryError> {
        let f = self.dataset.field(name).ok_or_else(|| {
            QueryError::Invalid(format!(
                "unknown field `{name}` of dataset `{}`; fields: {}",
                self.dataset.as_str(),
                self.dataset.field_names().join(", ")
            ))
        })?;
        if f.restricted && !self.can_read_names {
            return Err(QueryError::Denied(format!(
                "field `{name}` is readable only by callers with Admin, Processor or ConciergeKey"
            )));
        }
        Ok(f)
    }

    /// Binds a value compared with `field`, converting it to the stored form.
    fn bind(&mut self, field: &Field, v: &Value) -> Result<(), QueryError> {
        let bad = |what: &str| QueryError::Invalid(format!("field `{}`: {what}", field.name));
        let p = match (field.ty, v) {
            (FieldType::Text, Value::Text(s)) => P::T(s.clone()),
            (FieldType::Instant, Value::Timestamp(s) | Value::Text(s)) => P::I(
                parse_instant(s)
                    .ok_or_else(|| bad(&format!("`{s}` is not an ISO 8601 date-time")))?,
            ),
            (FieldType::Decimal, Value::Decimal(s) | Value::Text(s)) => {
                P::I(parse_decimal(s).map_err(|e| bad(&e))?)
            }
            (FieldType::Decimal, Value::Integer(i)) => P::I(
                i.checked_mul(10_000)
                    .ok_or_else(|| bad("value too large"))?,
            ),
            (_, Value::Null) => return Err(bad("compare with null using is-null / is-not-null")),
            (ty, other) => {
                return Err(bad(&format!(
                    "a {ty:?} field cannot be compared with {other:?}"
                )))
            }
        };
        self.params.push(p);
        Ok(())
    }

    fn predicate(&mut self, name: &str, c: &Condition) -> Result<String, QueryError> {
        let f = self.field(name)?;
        let col = f.column;
        Ok(match c {
            Condition::IsNull => format!("{col} IS NULL"),
            Condition::IsNotNull => format!("{col} IS NOT NULL"),
            Condition::AnyOf(vs) if vs.is_empty() => "1 = 0".into(),
            Condition::AnyOf(vs) => {
                for v in vs {
                    self.bind(&f, v)?;
                }
                format!("{col} IN ({})", vec!["?"; vs.len()].join(", "))
            }
            Condition::Eq(v)
            | Condition::Ne(v)
            | Condition::Lt(v)
            | Condition::Le(v)
            | Condition::Gt(v)
            | Condition::Ge(v) => {
                self.bind(&f, v)?;
                let op = match c {
                    Condition::Eq(_) => "=",
                    Condition::Ne(_) => "<>",
                    Condition::Lt(_) => "<",
                    Condition::Le(_) => "<=",
                    Condition::Gt(_) => ">",
                    _ => ">=",
                };
                format!("{col} {op} ?")
            }
        })
    }

    fn period(&self, col: &str, unit: PeriodUnit) -> String {
        if self.postgres {
            let ts = format!("(to_timestamp({col} / 1000.0) AT TIME ZONE 'UTC')");
            let fmt = match unit {
                PeriodUnit::Week => "IYYY-\"W\"IW",
                PeriodUnit::Month => "YYYY-MM",
                PeriodUnit::Quarter => "YYYY-\"Q\"Q",
                PeriodUnit::Year => "YYYY",
            };
            format!("CASE WHEN {col} IS NULL THEN NULL ELSE to_char({ts}, '{fmt}') END")
        } else {
            let t = format!("{col} / 1000, 'unixepoch'");
            match unit {
                PeriodUnit::Week => format!("strftime('%G-W%V', {t})"),
                PeriodUnit::Month => format!("strftime('%Y-%m', {t})"),
                PeriodUnit::Year => format!("strftime('%Y', {t})"),
                PeriodUnit::Quarter => format!(
                    "CASE WHEN {col} IS NULL THEN NULL ELSE strftime('%Y', {t}) || '-Q' || ((CAST(strftime('%m', {t}) AS INTEGER) + 2) / 3) END"
                ),
            }
        }
    }

    fn key(&mut self, k: &Key) -> Result<(String, Out), QueryError> {
        Ok(match k {
            Key::Field(name) => {
                let f = self.field(name)?;
                // On SQLite, `+col` keeps the planner from walking an index on the group key
                // (a random table lookup per row, ~4x slower than a scan over 1M loans); the
                // scope and filter predicates still use their indexes.
                let col = if self.postgres {
                    f.column.to_string()
                } else {
                    format!("+{}", f.column)
                };
                (col, out_of(f.ty))
            }
            Key::Period(name, unit) => {
                let f = self.field(name)?;
                if f.ty != FieldType::Instant {
                    return Err(QueryError::Invalid(format!(
                        "field `{name}` is not a date-time; it has no period"
                    )));
                }
                (self.period(f.column, *unit), Out::Text)
            }
            Key::Mapped(name, pairs, otherwise) => {
                let f = self.field(name)?;
                if f.ty != FieldType::Text {
                    return Err(QueryError::Invalid(format!(
                        "field `{name}` is not text; it cannot be mapped"
                    )));
                }
                let mut sql = format!("CASE {}", f.column);
                let mut seen = std::collections::HashSet::new();
                for (value, label) in pairs {
                    if seen.insert(value.as_str()) {
                        sql.push_str(" WHEN ? THEN ?");
                        self.params.push(P::T(value.clone()));
                        self.params.push(P::T(label.clone()));
                    }
                }
                match otherwise {
                    Some(o) => {
                        sql.push_str(" ELSE ?");
                        self.params.push(P::T(o.clone()));
                    }
                    None => {
                        sql.push_str(" ELSE ");
                        sql.push_str(f.column);
                    }
                }
                sql.push_str(" END");
                (sql, Out::Text)
            }
        })
    }
}

/// The spec's `filter` object, validated and compiled into predicates over alias `l`.
fn compile_filter(c: &mut Compiler, text: &str) -> Result<Vec<String>, QueryError> {
    let bad = |m: String| QueryError::Invalid(format!("filter: {m}"));
    let json: Json = serde_json::from_str(text).map_err(|e| bad(format!("not valid JSON: {e}")))?;
    let obj = match json {
        Json::Null => return Ok(vec![]),
        Json::Object(o) => o,
        _ => return Err(bad("must be an object".into())),
    };
    let mut out = Vec::new();
    for (key, v) in &obj {
        if v.is_null() {
            continue;
        }
        let string = |v: &Json| {
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| bad(format!("`{key}` must be a string")))
        };
        let strings = |v: &Json| -> Result<Vec<String>, QueryError> {
            v.as_array()
                .ok_or_else(|| bad(format!("`{key}` must be an array of strings")))?
                .iter()
                .map(|x| {
                    x.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| bad(format!("`{key}` must be an array of strings")))
                })
                .collect()
        };
        let instant = |v: &Json, end_of_day: bool| -> Result<i64, QueryError> {
            let s = string(v)?;
            let ms = parse_instant(&s)
                .ok_or_else(|| bad(format!("`{key}`: `{s}` is not an ISO 8601 date-time")))?;
            // A bare date as an upper bound includes that whole day.
            Ok(if end_of_day && s.trim().len() == 10 {
                ms + 86_400_000 - 1
            } else {
                ms
            })
        };
        let decimal = |v: &Json| -> Result<i64, QueryError> {
            let s = match v {
                Json::Number(n) => n.to_string(),
                Json::String(s) => s.clone(),
                _ => return Err(bad(format!("`{key}` must be a number"))),
            };
            parse_decimal(&s).map_err(|e| bad(format!("`{key}`: {e}")))
        };
        let uuid =
            |s: &str| parse_uuid(s).ok_or_else(|| bad(format!("`{key}`: `{s}` is not a GUID")));
        let any_of = |c: &mut Compiler, col: &str, values: Vec<String>| {
            if values.is_empty() {
                return "1 = 0".to_string();
            }
            let n = values.len();
            c.params.extend(values.into_iter().map(P::T));
            format!("{col} IN ({})", vec!["?"; n].join(", "))
        };
        let bound = |c: &mut Compiler, col: &str, op: &str, p: P| {
            c.params.push(p);
            format!("{col} {op} ?")
        };
        match key.as_str() {
            "searchText" => {
                for token in string(v)?.split_whitespace() {
                    let escaped = token.to_lowercase().replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
                    out.push(bound(c, "l.search_key", "LIKE", P::T(format!("%{escaped}%"))) + " ESCAPE '\\'");
                }
            }
            "statuses" => out.push(any_of(c, "l.status", strings(v)?)),
            "loanTypes" => out.push(any_of(c, "l.loan_type", strings(v)?)),
            "purposes" => out.push(any_of(c, "l.purpose", strings(v)?)),
            "statusDateFrom" => out.push(bound(c, "l.status_date", ">=", P::I(instant(v, false)?))),
            "statusDateTo" => out.push(bound(c, "l.status_date", "<=", P::I(instant(v, true)?))),
            "closingDateFrom" => out.push(bound(c, "l.estimated_closing_date", ">=", P::I(instant(v, false)?))),
            "closingDateTo" => out.push(bound(c, "l.estimated_closing_date", "<=", P::I(instant(v, true)?))),
            "updatedFrom" => out.push(bound(c, "l.updated", ">=", P::I(instant(v, false)?))),
            "updatedTo" => out.push(bound(c, "l.updated", "<=", P::I(instant(v, true)?))),
            "loanOfficerIds" => {
                let ids = strings(v)?.iter().map(|s| uuid(s)).collect::<Result<Vec<_>, _>>()?;
                out.push(any_of(c, "l.loan_officer_id", ids));
            }
            "referringAgentId" => out.push(bound(c, "l.referring_agent_id", "=", P::T(uuid(&string(v)?)?))),
            "processorId" => out.push(bound(c, "l.processor_id", "=", P::T(uuid(&string(v)?)?))),
            "loanAmountMin" => out.push(bound(c, "l.loan_amount", ">=", P::I(decimal(v)?))),
            "loanAmountMax" => out.push(bound(c, "l.loan_amount", "<=", P::I(decimal(v)?))),
            "commissionMin" => out.push(bound(c, "l.locked_compensation", ">=", P::I(decimal(v)?))),
            "commissionMax" => out.push(bound(c, "l.locked_compensation", "<=", P::I(decimal(v)?))),
            "propertyState" => out.push(bound(c, "l.property_state", "=", P::T(string(v)?.trim().to_uppercase()))),
            other => {
                return Err(bad(format!(
                    "unknown field `{other}`; fields: searchText, statuses, loanTypes, purposes, statusDateFrom, statusDateTo, \
                     closingDateFrom, closingDateTo, updatedFrom, updatedTo, loanOfficerIds, referringAgentId, processorId, \
                     loanAmountMin, loanAmountMax, commissionMin, commissionMax, propertyState"
                )))
            }
        }
    }
    Ok(out)
}

/// A compiled statement.
struct Compiled {
    sql: String,
    params: Vec<P>,
    outs: Vec<Out>,
    columns: Vec<String>,
    limit: u32,
}

fn compile(
    q: &Query,
    scope: Option<&Scope>,
    can_read_names: bool,
    postgres: bool,
) -> Result<Compiled, QueryError> {
    let mut c = Compiler {
        dataset: q.dataset,
        can_read_names,
        postgres,
        params: vec![],
    };
    if q.aggregates.is_empty() {
        return Err(QueryError::Invalid(
            "a query needs at least one aggregate (plugins read aggregates, not rows)".into(),
        ));
    }
    if q.group_by.len() > 8 || q.aggregates.len() > 16 {
        return Err(QueryError::Invalid(
            "at most 8 group-by keys and 16 aggregates".into(),
        ));
    }
    // Inner select list: keys (k0…), the distinct field (dd), aggregate sources (s0…).
    let mut inner = Vec::new();
    let mut outs = Vec::new();
    let mut columns = Vec::new();
    for (i, k) in q.group_by.iter().enumerate() {
        let (sql, out) = c.key(k)?;
        inner.push(format!("{sql} AS k{i}"));
        outs.push(out);
        columns.push(format!("key{i}"));
    }
    let key_params = std::mem::take(&mut c.params);
    if let Some(d) = &q.distinct_on {
        let f = c.field(d)?;
        inner.push(format!("{} AS dd", f.column));
    }
    let mut outer_aggs = Vec::new();
    for (i, a) in q.aggregates.iter().enumerate() {
        let (func, field) = match a {
            Aggregate::Count => ("COUNT(*)", None),
            Aggregate::CountOf(f) => ("COUNT", Some(f)),
            Aggregate::CountDistinct(f) => ("COUNT(DISTINCT", Some(f)),
            Aggregate::Sum(f) => ("SUM", Some(f)),
            Aggregate::Min(f) => ("MIN", Some(f)),
            Aggregate::Max(f) => ("MAX", Some(f)),
        };
        let expr = match field {
            None => "COUNT(*)".to_string(),
            Some(name) => {
                let f = c.field(name)?;
                inner.push(format!("{} AS s{i}", f.column));
                let bigint = if postgres { "BIGINT" } else { "INTEGER" };
                match a {
                    Aggregate::CountDistinct(_) => format!("COUNT(DISTINCT s{i})"),
                    Aggregate::Sum(_) if f.ty == FieldType::Text => {
                        return Err(QueryError::Invalid(format!(
                            "field `{name}` is text; it cannot be summed"
                        )))
                    }
                    Aggregate::Sum(_) => format!("CAST(SUM(s{i}) AS {bigint})"),
                    _ => format!("{func}(s{i})"),
                }
            }
        };
        outs.push(match (a, field.and_then(|n| q.dataset.field(n))) {
            (Aggregate::Count | Aggregate::CountOf(_) | Aggregate::CountDistinct(_), _) => Out::Int,
            (_, Some(f)) => out_of(f.ty),
            (_, None) => Out::Int,
        });
        outer_aggs.push(format!("{expr} AS a{i}"));
        columns.push(format!("agg{i}"));
    }

    // WHERE: scope, filter, predicates.
    let mut wheres = Vec::new();
    let mut where_params = Vec::new();
    if q.dataset.has_loans() {
        let scope = scope.ok_or_else(|| {
            QueryError::Unavailable("no caller scope for a caller-scoped dataset".into())
        })?;
        let (sql, params) = scope.predicate();
        wheres.push(sql);
        where_params.extend(params.into_iter().map(P::T));
    }
    if let Some(f) = &q.filter {
        if !q.dataset.has_loans() {
            return Err(QueryError::Invalid(format!(
                "dataset `{}` takes no loan filter",
                q.dataset.as_str()
            )));
        }
        wheres.extend(compile_filter(&mut c, f)?);
    }
    for (field, cond) in &q.predicates {
        wheres.push(c.predicate(field, cond)?);
    }
    where_params.extend(std::mem::take(&mut c.params));
    let where_sql = if wheres.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", wheres.join(" AND "))
    };

    let distinct = if q.distinct_on.is_some() {
        "DISTINCT "
    } else {
        ""
    };
    let inner_list = if inner.is_empty() {
        "1 AS one".to_string()
    } else {
        inner.join(", ")
    };
    let inner_sql = format!(
        "SELECT {distinct}{inner_list} FROM {}{where_sql}",
        q.dataset.from_clause()
    );
    let keys: Vec<String> = (0..q.group_by.len()).map(|i| format!("k{i}")).collect();
    let group = if keys.is_empty() {
        String::new()
    } else {
        format!(" GROUP BY {}", keys.join(", "))
    };
    let mut select = keys.clone();
    select.extend(outer_aggs);
    let grouped = format!("SELECT {} FROM ({inner_sql}) i{group}", select.join(", "));

    // Outer: deterministic order (nulls last on both engines), total groups, limit.
    let names: Vec<String> = keys
        .iter()
        .cloned()
        .chain((0..q.aggregates.len()).map(|i| format!("a{i}")))
        .collect();
    let mut order = Vec::new();
    if q.order_by.is_empty() {
        for k in &keys {
            order.push(format!("({k} IS NULL), {k}"));
        }
    } else {
        for (col, desc) in &q.order_by {
            let name = names.get(*col as usize).ok_or_else(|| {
                QueryError::Invalid(format!(
                    "order-by column {col} does not exist ({} columns)",
                    names.len()
                ))
            })?;
            order.push(format!(
                "({name} IS NULL), {name}{}",
                if *desc { " DESC" } else { "" }
            ));
        }
        for k in &keys {
            order.push(format!("({k} IS NULL), {k}"));
        }
    }
    let limit = q.limit.unwrap_or(ROW_CAP).min(ROW_CAP);
    let order_sql = if order.is_empty() {
        String::new()
    } else {
        format!(" ORDER BY {}", order.join(", "))
    };
    let sql = format!(
        "SELECT g.*, COUNT(*) OVER () AS total_groups FROM ({grouped}) g{order_sql} LIMIT {limit}"
    );
    let mut params = key_params;
    params.extend(where_params);
    Ok(Compiled {
        sql,
        params,
        outs,
        columns,
        limit,
    })
}

/// Runs a query for a caller (`scope` is required for caller-scoped datasets).
pub async fn run(
    db: &Db,
    q: &Query,
    scope: Option<&Scope>,
    can_read_names: bool,
) -> Result<Rows, QueryError> {
    let postgres = matches!(db, Db::Postgres(_));
    let compiled = compile(q, scope, can_read_names, postgres)?;
    let work = execute(db, &compiled);
    let rows = tokio::time::timeout(STATEMENT_TIMEOUT, work)
        .await
        .map_err(|_| {
            QueryError::Unavailable(format!(
                "the query ran longer than {} s",
                STATEMENT_TIMEOUT.as_secs()
            ))
        })??;
    let total_groups = rows.first().map(|(_, t)| *t).unwrap_or(0) as u64;
    let rows: Vec<Vec<Value>> = rows.into_iter().map(|(r, _)| r).collect();
    Ok(Rows {
        truncated: total_groups > rows.len() as u64,
        columns: compiled.columns,
        rows,
        total_groups: if compiled.limit == 0 { 0 } else { total_groups },
    })
}

type RawRow = (Vec<Value>, i64);

async fn execute(db: &Db, c: &Compiled) -> Result<Vec<RawRow>, QueryError> {
    macro_rules! fetch {
        ($pool:expr, $sql:expr) => {{
            let mut q = sqlx::query($sql);
            for p in &c.params {
                q = match p {
                    P::T(s) => q.bind(s.clone()),
                    P::I(i) => q.bind(*i),
                };
            }
            let rows = q.fetch_all($pool).await.map_err(|e| {
                tracing::error!(error = %e, "query failed");
                QueryError::Unavailable("the data store could not run the query".into())
            })?;
            let mut out = Vec::with_capacity(rows.len());
            for row in rows {
                let mut values = Vec::with_capacity(c.outs.len());
                for (i, o) in c.outs.iter().enumerate() {
                    let v = match o {
                        Out::Text => row.try_get::<Option<String>, _>(i).map(|v| v.map(Value::Text)),
                        Out::Int => row.try_get::<Option<i64>, _>(i).map(|v| v.map(Value::Integer)),
                        Out::Instant => row.try_get::<Option<i64>, _>(i).map(|v| v.map(|ms| Value::Timestamp(format_instant(ms)))),
                        Out::Decimal => row.try_get::<Option<i64>, _>(i).map(|v| v.map(|d| Value::Decimal(format_decimal(d as i128)))),
                    }
                    .map_err(|e| {
                        tracing::error!(error = %e, column = i, "cannot decode a result column");
                        QueryError::Unavailable("the data store returned an unexpected value".into())
                    })?;
                    values.push(v.unwrap_or(Value::Null));
                }
                let total: i64 = row.try_get(c.outs.len()).unwrap_or(0);
                out.push((values, total));
            }
            Ok(out)
        }};
    }
    match db {
        Db::Sqlite(p) => fetch!(p, c.sql.as_str()),
        Db::Postgres(p) => {
            let mut n = 0;
            let numbered: String = c
                .sql
                .chars()
                .map(|ch| {
                    if ch == '?' {
                        n += 1;
                        format!("${n}")
                    } else {
                        ch.to_string()
                    }
                })
                .collect();
            fetch!(p, numbered.as_str())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(dataset: Dataset) -> Query {
        Query {
            dataset,
            filter: None,
            predicates: vec![],
            group_by: vec![],
            distinct_on: None,
            aggregates: vec![Aggregate::Count],
            order_by: vec![],
            limit: None,
        }
    }

    #[test]
    fn scope_is_always_anded_for_loans() {
        let scope = Scope {
            originated_by: Some("me".into()),
            ..Default::default()
        };
        let c = compile(&q(Dataset::Loans), Some(&scope), false, false).unwrap();
        assert!(c.sql.contains("WHERE ((l.loan_officer_id = ? OR l.loan_assistant_id = ? OR l.referring_agent_id = ?))"), "{}", c.sql);
        assert!(
            compile(&q(Dataset::Loans), None, false, false).is_err(),
            "no scope, no query"
        );
    }

    #[test]
    fn strings_never_reach_sql_text() {
        let mut query = q(Dataset::Loans);
        let evil = "x'); DROP TABLE loans; --";
        query.filter =
            Some(serde_json::json!({"searchText": evil, "statuses": [evil]}).to_string());
        query
            .predicates
            .push(("loanNumber".into(), Condition::Eq(Value::Text(evil.into()))));
        query.group_by.push(Key::Mapped(
            "status".into(),
            vec![(evil.into(), evil.into())],
            Some(evil.into()),
        ));
        let c = compile(
            &query,
            Some(&Scope {
                all: true,
                ..Default::default()
            }),
            true,
            false,
        )
        .unwrap();
        assert!(!c.sql.contains("DROP"), "{}", c.sql);
    }

    #[test]
    fn unknown_fields_and_restricted_names() {
        let mut query = q(Dataset::Loans);
        query.group_by.push(Key::Field("borrowerSsn".into()));
        let all = Scope {
            all: true,
            ..Default::default()
        };
        assert!(
            matches!(compile(&query, Some(&all), true, false), Err(QueryError::Invalid(m)) if m.starts_with("unknown field `borrowerSsn`"))
        );
        let mut query = q(Dataset::Loans);
        query.group_by.push(Key::Field("loanOfficerName".into()));
        assert!(matches!(
            compile(&query, Some(&all), false, false),
            Err(QueryError::Denied(_))
        ));
        assert!(compile(&query, Some(&all), true, false).is_ok());
    }

    #[test]
    fn filter_errors_name_the_field() {
        let mut query = q(Dataset::Loans);
        query.filter = Some(r#"{"loanAmountMin": "lots"}"#.into());
        let all = Scope {
            all: true,
            ..Default::default()
        };
        assert_eq!(
            compile(&query, Some(&all), true, false).err(),
            Some(QueryError::Invalid(
                "filter: `loanAmountMin`: `lots` is not a decimal number".into()
            ))
        );
        query.filter = Some(r#"{"officer": 1}"#.into());
        assert!(
            matches!(compile(&query, Some(&all), true, false), Err(QueryError::Invalid(m)) if m.starts_with("filter: unknown field `officer`"))
        );
    }
}
