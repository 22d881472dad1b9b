//! `query_data_warehouse`: a structured, aggregate query over a Data Warehouse dataset (never SQL
//! text): group-by keys (fields or a timestamp's week, month, quarter or year), aggregates,
//! predicates, order and a row cap, run through `data` organisation-wide (docs/design.md §7.12).
//! The host checks every field against the manifest's aggregate-only grants, so a query that
//! groups on, compares or returns an identifying field (`loanId`, `id`) is refused; counting one
//! is allowed.

use loanhost_guest::data::Value as Cell;
use loanhost_guest::data::{self, Aggregate, Condition, Key, Order, PeriodUnit, Predicate, Query};
use loanhost_guest::warehouse::{self, FieldKind, WarehouseDataset};
use loanhost_guest::{parse_arguments, Description, Tool, ToolError};
use serde::Deserialize;
use serde_json::{json, Value};

/// Rows an answer holds unless the caller asks for another number.
const DEFAULT_LIMIT: u32 = 100;
/// Rows an answer holds at most.
const MAX_LIMIT: u32 = 1000;
/// Group-by keys at most.
const MAX_KEYS: usize = 3;
/// Aggregates at most.
const MAX_AGGREGATES: usize = 6;
/// Predicates at most.
const MAX_PREDICATES: usize = 16;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Args {
    dataset: String,
    #[serde(default)]
    group_by: Vec<GroupKey>,
    #[serde(default)]
    aggregates: Option<Vec<AggregateArg>>,
    #[serde(default, rename = "where")]
    predicates: Vec<PredicateArg>,
    #[serde(default)]
    order_by: Vec<OrderArg>,
    #[serde(default)]
    limit: Option<u32>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum GroupKey {
    Field(String),
    Period { field: String, period: String },
}

#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct AggregateArg {
    function: String,
    #[serde(default)]
    field: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PredicateArg {
    field: String,
    op: String,
    #[serde(default)]
    value: Option<Value>,
    #[serde(default)]
    values: Option<Vec<Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OrderArg {
    column: String,
    #[serde(default)]
    descending: bool,
}

struct QueryDataWarehouse;

impl Tool for QueryDataWarehouse {
    fn describe() -> Description {
        Description::new(
            "query_data_warehouse",
            "Query the Data Warehouse",
            "Runs a structured, aggregate query over one Data Warehouse dataset \
             (dw-loan-milestones or dw-deals; see get_data_warehouse_fields): groupBy fields or \
             {field, period: Week|Month|Quarter|Year} of a timestamp, aggregates (Count, \
             CountDistinct, Min, Max), where predicates (eq, ne, lt, le, gt, ge, in, isNull, \
             isNotNull), orderBy output columns, and a row limit. Answers groups, never \
             individual rows: identifying fields (loanId, id) can only be counted \
             (CountDistinct). Use the warehouse reports (warehouse_loan_milestone_report, \
             mlo_pipeline_report) for their standard shapes; this tool for other cuts. \
             Organisation-wide; Admin, Processor and ConciergeKey.",
        )
        .input_schema(input_schema())
        .output_schema(output_schema())
    }

    fn call(arguments: Value) -> Result<Value, ToolError> {
        let args: Args = parse_arguments(arguments)?;
        let (query, columns) = compile(&args)?;
        let answer = data::run(&query)?;
        Ok(json!({
            "dataset": query.dataset,
            "columns": columns,
            "truncated": answer.truncated,
            "totalGroups": answer.total_groups,
            "rows": rows_json(answer.rows),
        }))
    }
}

fn bad(m: impl Into<String>) -> ToolError {
    ToolError::invalid_params(m)
}

/// The host's query and the answer's column names.
fn compile(args: &Args) -> Result<(Query, Vec<String>), ToolError> {
    let d = warehouse::dataset(&args.dataset).ok_or_else(|| {
        bad(format!(
            "dataset: `{}` is not one of {}",
            args.dataset,
            warehouse::DATASETS.map(|d| d.name).join(", ")
        ))
    })?;
    let field = |key: &str, name: &str| {
        d.field(name).ok_or_else(|| {
            bad(format!(
                "{key}: `{name}` is not a field of {}; its fields: {}",
                d.name,
                d.fields
                    .iter()
                    .map(|f| f.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
    };
    if args.group_by.len() > MAX_KEYS {
        return Err(bad(format!("groupBy: at most {MAX_KEYS} keys")));
    }
    let mut columns = Vec::new();
    let mut group_by = Vec::new();
    for key in &args.group_by {
        match key {
            GroupKey::Field(name) => {
                field("groupBy", name)?;
                columns.push(name.clone());
                group_by.push(Key::Field(name.clone()));
            }
            GroupKey::Period {
                field: name,
                period,
            } => {
                let f = field("groupBy", name)?;
                if f.kind != FieldKind::Timestamp {
                    return Err(bad(format!("groupBy: `{name}` is not a timestamp")));
                }
                let unit = match period.as_str() {
                    "Week" => PeriodUnit::Week,
                    "Month" => PeriodUnit::Month,
                    "Quarter" => PeriodUnit::Quarter,
                    "Year" => PeriodUnit::Year,
                    other => {
                        return Err(bad(format!(
                            "groupBy: period `{other}` is not one of Week, Month, Quarter, Year"
                        )))
                    }
                };
                columns.push(format!("{name}{period}"));
                group_by.push(Key::Period((name.clone(), unit)));
            }
        }
    }
    // `Count` when none were asked for.
    let wanted = args.aggregates.clone().unwrap_or_else(|| {
        vec![AggregateArg {
            function: "Count".into(),
            field: None,
        }]
    });
    if wanted.is_empty() || wanted.len() > MAX_AGGREGATES {
        return Err(bad(format!(
            "aggregates: 1 to {MAX_AGGREGATES} (Count when left out)"
        )));
    }
    let mut aggregates = Vec::new();
    for a in wanted {
        let named = |what: &str| -> Result<String, ToolError> {
            let name = a
                .field
                .as_deref()
                .ok_or_else(|| bad(format!("aggregates: {what} needs a field")))?;
            field("aggregates", name)?;
            Ok(name.to_string())
        };
        let (aggregate, column) = match a.function.as_str() {
            "Count" if a.field.is_none() => (Aggregate::Count, "count".to_string()),
            "Count" => {
                let f = named("Count")?;
                (Aggregate::CountOf(f.clone()), format!("count{}", upper(&f)))
            }
            "CountDistinct" => {
                let f = named("CountDistinct")?;
                (
                    Aggregate::CountDistinct(f.clone()),
                    format!("distinct{}", upper(&f)),
                )
            }
            "Min" => {
                let f = named("Min")?;
                (Aggregate::Min(f.clone()), format!("min{}", upper(&f)))
            }
            "Max" => {
                let f = named("Max")?;
                (Aggregate::Max(f.clone()), format!("max{}", upper(&f)))
            }
            other => {
                return Err(bad(format!(
                    "aggregates: `{other}` is not one of Count, CountDistinct, Min, Max"
                )))
            }
        };
        aggregates.push(aggregate);
        columns.push(column);
    }
    if args.predicates.len() > MAX_PREDICATES {
        return Err(bad(format!("where: at most {MAX_PREDICATES} predicates")));
    }
    let mut predicates = Vec::new();
    for p in &args.predicates {
        let f = field("where", &p.field)?;
        let value = |v: &Value| cell(d, f.kind, &p.field, v);
        let one = || -> Result<Cell, ToolError> {
            value(
                p.value
                    .as_ref()
                    .ok_or_else(|| bad(format!("where: `{}` {} needs a value", p.field, p.op)))?,
            )
        };
        let condition = match p.op.as_str() {
            "eq" => Condition::Eq(one()?),
            "ne" => Condition::Ne(one()?),
            "lt" => Condition::Lt(one()?),
            "le" => Condition::Le(one()?),
            "gt" => Condition::Gt(one()?),
            "ge" => Condition::Ge(one()?),
            "in" => Condition::AnyOf(
                p.values
                    .as_ref()
                    .ok_or_else(|| bad(format!("where: `{}` in needs values", p.field)))?
                    .iter()
                    .map(value)
                    .collect::<Result<_, _>>()?,
            ),
            "isNull" => Condition::IsNull,
            "isNotNull" => Condition::IsNotNull,
            other => {
                return Err(bad(format!(
                "where: op `{other}` is not one of eq, ne, lt, le, gt, ge, in, isNull, isNotNull"
            )))
            }
        };
        predicates.push(Predicate {
            field: p.field.clone(),
            condition,
        });
    }
    let mut order_by = Vec::new();
    for o in &args.order_by {
        let Some(i) = columns.iter().position(|c| *c == o.column) else {
            return Err(bad(format!(
                "orderBy: `{}` is not an output column; the columns: {}",
                o.column,
                columns.join(", ")
            )));
        };
        order_by.push(Order {
            column: i as u32,
            descending: o.descending,
        });
    }
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT);
    if limit == 0 || limit > MAX_LIMIT {
        return Err(bad(format!(
            "limit: {limit} is not between 1 and {MAX_LIMIT}"
        )));
    }
    Ok((
        Query {
            dataset: d.name.into(),
            filter: None,
            predicates,
            group_by,
            distinct_on: None,
            aggregates,
            order_by,
            limit: Some(limit),
        },
        columns,
    ))
}

/// `loanId` → `LoanId`, for column names.
fn upper(name: &str) -> String {
    let mut c = name.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// A predicate's value as the field's type.
fn cell(d: &WarehouseDataset, kind: FieldKind, name: &str, v: &Value) -> Result<Cell, ToolError> {
    let Value::String(s) = v else {
        return Err(bad(format!(
            "where: `{name}` of {} takes a string, got {v}",
            d.name
        )));
    };
    Ok(match kind {
        FieldKind::Text => Cell::Text(s.clone()),
        // The host parses it (RFC 3339) and names the field when it is not an instant.
        FieldKind::Timestamp => Cell::Timestamp(s.clone()),
    })
}

fn rows_json(rows: Vec<Vec<Cell>>) -> Vec<Value> {
    rows.into_iter()
        .map(|r| {
            Value::Array(
                r.into_iter()
                    .map(|c| match c {
                        Cell::Null => Value::Null,
                        Cell::Boolean(b) => json!(b),
                        Cell::Integer(i) => json!(i),
                        Cell::Decimal(s) | Cell::Text(s) | Cell::Timestamp(s) => json!(s),
                    })
                    .collect(),
            )
        })
        .collect()
}

fn input_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["dataset"],
        "properties": {
            "dataset": {"type": "string", "enum": warehouse::DATASETS.map(|d| d.name)},
            "groupBy": {"type": "array", "maxItems": MAX_KEYS, "items": {"oneOf": [
                {"type": "string", "description": "A field."},
                {"type": "object", "required": ["field", "period"], "additionalProperties": false,
                 "properties": {"field": {"type": "string"}, "period": {"enum": ["Week", "Month", "Quarter", "Year"]}}}
            ]}},
            "aggregates": {"type": "array", "minItems": 1, "maxItems": MAX_AGGREGATES, "items": {
                "type": "object", "required": ["function"], "additionalProperties": false,
                "properties": {"function": {"enum": ["Count", "CountDistinct", "Min", "Max"]}, "field": {"type": "string"}}
            }, "description": "Count when left out."},
            "where": {"type": "array", "maxItems": MAX_PREDICATES, "items": {
                "type": "object", "required": ["field", "op"], "additionalProperties": false,
                "properties": {
                    "field": {"type": "string"},
                    "op": {"enum": ["eq", "ne", "lt", "le", "gt", "ge", "in", "isNull", "isNotNull"]},
                    "value": {"type": "string", "description": "Text, or an RFC 3339 instant for a timestamp."},
                    "values": {"type": "array", "items": {"type": "string"}}
                }
            }},
            "orderBy": {"type": "array", "items": {
                "type": "object", "required": ["column"], "additionalProperties": false,
                "properties": {"column": {"type": "string", "description": "An output column name."}, "descending": {"type": "boolean"}}
            }, "description": "By default the keys ascending."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT}
        }
    })
}

fn output_schema() -> Value {
    json!({
        "type": "object",
        "required": ["dataset", "columns", "rows", "truncated", "totalGroups"],
        "properties": {
            "dataset": {"type": "string"},
            "columns": {"type": "array", "items": {"type": "string"}, "description": "The keys (a period key is the field and the period, e.g. occurredAtMonth), then the aggregates (count, distinctLoanId, minOccurredAt, …)."},
            "rows": {"type": "array", "items": {"type": "array"}, "description": "One value per column: counts as integers, keys and instants as strings."},
            "truncated": {"type": "boolean", "description": "More groups than the limit."},
            "totalGroups": {"type": "integer", "minimum": 0}
        }
    })
}

loanhost_guest::export_tool!(QueryDataWarehouse);
