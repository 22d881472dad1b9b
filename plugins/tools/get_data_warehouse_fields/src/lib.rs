//! `get_data_warehouse_fields`: the Data Warehouse's datasets, their fields and types, which
//! fields identify a row (only counted), and the values of the small fields (milestones, deal
//! stages) as the warehouse holds them now, read through `data` (org-wide; docs/design.md
//! §7.11). What a model reads before it writes a `query_data_warehouse` query.

use loanhost_guest::data::{self, Aggregate, Key, Query, Value as Cell};
use loanhost_guest::warehouse::DATASETS;
use loanhost_guest::{Description, NoArguments, Tool, ToolError};
use serde_json::{json, Value};

/// Values of a small field listed at most.
const MAX_VALUES: u32 = 100;

struct GetDataWarehouseFields;

impl Tool for GetDataWarehouseFields {
    fn describe() -> Description {
        Description::new(
            "get_data_warehouse_fields",
            "Data Warehouse datasets and fields",
            "Lists the Data Warehouse datasets (loan milestones, MLO recruiting deals), each \
             field with its type, whether it identifies a row (such fields can only be counted \
             with CountDistinct, never grouped on or filtered), and the current values of the \
             small fields (milestone names, deal stages). Read it before writing a \
             query_data_warehouse query. Organisation-wide; Admin, Processor and ConciergeKey.",
        )
        .input_schema(json!({"type": "object", "additionalProperties": false, "properties": {}}))
        .output_schema(json!({
            "type": "object",
            "required": ["datasets"],
            "properties": {"datasets": {"type": "array", "items": {
                "type": "object",
                "required": ["name", "description", "fields"],
                "properties": {
                    "name": {"type": "string"},
                    "description": {"type": "string"},
                    "fields": {"type": "array", "items": {
                        "type": "object",
                        "required": ["name", "type", "identifying", "description"],
                        "properties": {
                            "name": {"type": "string"},
                            "type": {"type": "string", "enum": ["text", "timestamp"]},
                            "identifying": {"type": "boolean"},
                            "description": {"type": "string"},
                            "values": {"type": "array", "items": {"type": "string"}},
                            "valuesTruncated": {"type": "boolean"}
                        }
                    }}
                }
            }}}
        }))
    }

    fn call(arguments: Value) -> Result<Value, ToolError> {
        let NoArguments {} = loanhost_guest::parse_arguments(arguments)?;
        let mut datasets = Vec::new();
        for d in &DATASETS {
            let mut fields = Vec::new();
            for f in d.fields {
                let mut field = json!({
                    "name": f.name,
                    "type": f.kind.name(),
                    "identifying": f.identifying,
                    "description": f.description,
                });
                if f.enumerable {
                    let rows = data::run(&Query {
                        dataset: d.name.into(),
                        filter: None,
                        predicates: vec![],
                        group_by: vec![Key::Field(f.name.into())],
                        distinct_on: None,
                        aggregates: vec![Aggregate::Count],
                        order_by: vec![],
                        limit: Some(MAX_VALUES),
                    })?;
                    let values: Vec<&str> = rows
                        .rows
                        .iter()
                        .filter_map(|r| match r.first() {
                            Some(Cell::Text(t)) => Some(t.as_str()),
                            _ => None,
                        })
                        .collect();
                    field["values"] = json!(values);
                    field["valuesTruncated"] = json!(rows.truncated);
                }
                fields.push(field);
            }
            datasets.push(json!({"name": d.name, "description": d.description, "fields": fields}));
        }
        Ok(json!({"datasets": datasets}))
    }
}

loanhost_guest::export_tool!(GetDataWarehouseFields);
