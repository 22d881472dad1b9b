//! A manifest's `datasets`: per dataset, the fields the plugin reads and whether it may list
//! (`[datasets.loans] fields = […] listing = true`), or, in the form before field grants, a
//! list of dataset names (every field, aggregate-only). Every refusal names the key.

use crate::data::catalog::Dataset;
use crate::data::grant::Grant;

/// The grants a manifest's `datasets` value declares.
pub(super) fn grants(value: &toml::Value) -> Result<Vec<Grant>, String> {
    match value {
        toml::Value::Array(names) => names
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let key = format!("datasets[{i}]");
                let name = v.as_str().ok_or_else(|| {
                    format!("{key}: expected a dataset name, found {}", v.type_str())
                })?;
                dataset(&key, name).map(Grant::every_field)
            })
            .collect(),
        toml::Value::Table(table) => table
            .iter()
            .map(|(name, v)| {
                let key = format!("datasets.{name}");
                let dataset = dataset(&key, name)?;
                grant(&key, dataset, v)
            })
            .collect(),
        other => Err(format!(
            "datasets: expected a table per dataset (`[datasets.loans]` with `fields`) or a list \
             of dataset names, found {}",
            other.type_str()
        )),
    }
}

fn dataset(key: &str, name: &str) -> Result<Dataset, String> {
    Dataset::parse(name).ok_or_else(|| {
        format!(
            "{key}: unknown dataset `{name}`; known: {}",
            Dataset::ALL.map(|d| d.as_str()).join(", ")
        )
    })
}

fn grant(key: &str, dataset: Dataset, value: &toml::Value) -> Result<Grant, String> {
    let table = value.as_table().ok_or_else(|| {
        format!(
            "{key}: expected a table with `fields`, found {}",
            value.type_str()
        )
    })?;
    if let Some(unknown) = table.keys().find(|k| *k != "fields" && *k != "listing") {
        return Err(format!(
            "{key}.{unknown}: unknown key; a dataset's grant has `fields` and `listing`"
        ));
    }
    let listing = match table.get("listing") {
        None => false,
        Some(toml::Value::Boolean(b)) => *b,
        Some(other) => {
            return Err(format!(
                "{key}.listing: expected true or false, found {}",
                other.type_str()
            ))
        }
    };
    let listed = table
        .get("fields")
        .ok_or_else(|| format!("{key}: missing `fields`, the fields the plugin reads"))?
        .as_array()
        .ok_or_else(|| format!("{key}.fields: expected a list of field names"))?;
    let mut fields = std::collections::BTreeSet::new();
    for (i, v) in listed.iter().enumerate() {
        let name = v.as_str().ok_or_else(|| {
            format!(
                "{key}.fields[{i}]: expected a field name, found {}",
                v.type_str()
            )
        })?;
        if dataset.field(name).is_none() {
            return Err(format!(
                "{key}.fields[{i}]: unknown field `{name}` of dataset `{}`; fields: {}",
                dataset.as_str(),
                dataset.field_names().join(", ")
            ));
        }
        if !fields.insert(name.to_string()) {
            return Err(format!("{key}.fields[{i}]: `{name}` is named twice"));
        }
    }
    Ok(Grant {
        dataset,
        fields,
        listing,
    })
}
