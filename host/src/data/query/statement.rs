//! A compiled statement, and its wrapping: deterministic order (nulls last on both engines),
//! the total number of groups, the limit.

use super::*;

/// Wraps a grouped statement: deterministic order (nulls last on both engines), the total
/// number of groups, the limit.
pub(super) fn finish(
    q: &Query,
    grouped: String,
    key_params: Vec<P>,
    where_params: Vec<P>,
    outs: Vec<Out>,
    columns: Vec<String>,
) -> Result<Compiled, QueryError> {
    let keys: Vec<String> = (0..q.group_by.len()).map(|i| format!("k{i}")).collect();
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
        fold: None,
    })
}
