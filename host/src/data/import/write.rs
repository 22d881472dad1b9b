//! Writing a batch of records: upserts by id (the last line of an id wins whole), history rows
//! de-duplicated, loans' integer keys and their history's carried columns kept in step.

use std::collections::HashMap;

use super::error::ImportError;
use super::tables::SetRow;
use super::tables::Stale;
use super::tables::BATCH_PARAMS;
use super::tables::DEALS;
use super::tables::MILESTONES;
use super::tables::V;
use super::tx::Tx;
use crate::data::history_keys;
use crate::data::import::parse::Record;

pub(super) const LOAN_COLUMNS: [&str; 27] = [
    "id",
    "loan_number",
    "borrower_first_name",
    "borrower_last_name",
    "borrower_email",
    "search_key",
    "status",
    "status_date",
    "loan_type",
    "purpose",
    "estimated_closing_date",
    "updated",
    "loan_amount",
    "locked_compensation",
    "estimated_compensation",
    "property_state",
    "company_id",
    "loan_officer_id",
    "loan_officer_name",
    "loan_assistant_id",
    "processor_id",
    "processor_name",
    "referring_agent_id",
    "referring_agent_name",
    "status_month",
    "estimated_closing_month",
    "updated_month",
];

/// `ON CONFLICT (<first column>) DO UPDATE SET c = excluded.c, …` for every other column.
pub(super) fn upsert_tail(cols: &[&str]) -> String {
    let sets: Vec<String> = cols
        .iter()
        .skip(1)
        .map(|c| format!("{c} = excluded.{c}"))
        .collect();
    format!(
        "ON CONFLICT ({}) DO UPDATE SET {}",
        cols[0],
        sets.join(", ")
    )
}

/// The first value of each row (the loan id of loans, history and warehouse rows).
pub(super) fn first_texts(rows: &[Vec<V>]) -> Vec<String> {
    rows.iter()
        .filter_map(|r| match r.first() {
            Some(V::T(Some(id))) => Some(id.clone()),
            _ => None,
        })
        .collect()
}

/// Each row with its loan's key in front (rows start with the loan id), and the keys in row
/// order.
pub(super) fn with_keys(rows: Vec<Vec<V>>, keys: &HashMap<String, i64>) -> (Vec<Vec<V>>, Vec<i64>) {
    let mut order = Vec::with_capacity(rows.len());
    let rows = rows
        .into_iter()
        .map(|r| {
            let key = match r.first() {
                Some(V::T(Some(id))) => keys[id],
                _ => unreachable!("every row starts with its loan id"),
            };
            order.push(key);
            std::iter::once(V::I(Some(key))).chain(r).collect()
        })
        .collect();
    (rows, order)
}

/// Keeps the last record of each id (PostgreSQL refuses to upsert one row twice in a statement).
pub(super) fn last_per_id(rows: Vec<Vec<V>>) -> Vec<Vec<V>> {
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut out: Vec<Vec<V>> = Vec::with_capacity(rows.len());
    for row in rows {
        let V::T(Some(id)) = &row[0] else { continue };
        match index.get(id) {
            Some(&i) => out[i] = row,
            None => {
                index.insert(id.clone(), out.len());
                out.push(row);
            }
        }
    }
    out
}

/// Writes a batch of `file`'s records. `history_empty` (the history table was empty when the
/// file began): loans need not bring history rows in step (there are none yet), and history
/// rows reach the period sets when the file is done instead of batch by batch.
pub(super) async fn write(
    tx: &mut Tx,
    file: &str,
    records: Vec<Record>,
    history_empty: bool,
    stale: &mut Stale,
) -> Result<(), ImportError> {
    if records.is_empty() {
        return Ok(());
    }
    if matches!(
        file,
        "loans.jsonl" | "agents.jsonl" | "loan_applications.jsonl"
    ) {
        // The loans, or who sees which: a list's cursors from before name another snapshot.
        tx.exec(NEXT_GENERATION, &[]).await?;
    }
    if file == "agents.jsonl" {
        return write_agents(tx, records).await;
    }
    let rows: Vec<Vec<V>> = records
        .into_iter()
        .filter_map(|r| match r {
            Record::Row(row) => Some(row),
            Record::Agent { .. } => None,
        })
        .collect();
    match file {
        "loans.jsonl" => write_loans(tx, rows, history_empty, stale).await,
        "los_status_history.jsonl" => write_history(tx, rows, history_empty, stale).await,
        "dw_loan_milestones.jsonl" => write_milestones(tx, rows, stale).await,
        "dw_deals.jsonl" => write_deals(tx, rows, stale).await,
        "user_licenses.jsonl" => super::sheets::write_licenses(tx, rows, stale).await,
        "pricing.jsonl" => super::sheets::write_rates(tx, rows, stale).await,
        "loan_applications.jsonl" => super::applications::write_applications(tx, rows).await,
        _ => Ok(()),
    }
}

/// Moves the snapshot to its next generation (schema v17): the cursors of lists cut from the
/// one before are refused from the commit on.
const NEXT_GENERATION: &str = "UPDATE listing_state SET generation = generation + 1 WHERE id = 1";

/// Agents: the last line of each wins whole (its roles and managed agents replace those of
/// earlier lines and earlier imports).
async fn write_agents(tx: &mut Tx, records: Vec<Record>) -> Result<(), ImportError> {
    let mut rows = Vec::new();
    let mut roles = Vec::new();
    let mut managed = Vec::new();
    let mut ids = Vec::new();
    // The last line of an agent wins whole: its roles and managed agents replace
    // those of earlier lines, never add to them.
    let mut last_line: HashMap<String, usize> = HashMap::new();
    for (i, r) in records.iter().enumerate() {
        if let Record::Agent { id, .. } = r {
            last_line.insert(id.clone(), i);
        }
    }
    let records = records
        .into_iter()
        .enumerate()
        .filter(|(i, r)| match r {
            Record::Agent { id, .. } => last_line.get(id) == Some(i),
            Record::Row(_) => false,
        })
        .map(|(_, r)| r);
    for r in records {
        if let Record::Agent {
            row,
            id,
            roles: rs,
            managed: ms,
        } = r
        {
            rows.push(row);
            roles.extend(
                rs.into_iter()
                    .map(|x| vec![V::T(Some(id.clone())), V::T(Some(x))]),
            );
            managed.extend(
                ms.into_iter()
                    .map(|x| vec![V::T(Some(id.clone())), V::T(Some(x))]),
            );
            ids.push(id);
        }
    }
    let cols = [
        "id",
        "email",
        "email_key",
        "first_name",
        "last_name",
        "company_id",
        "active",
    ];
    tx.insert_rows("agents", &cols, &upsert_tail(&cols), &last_per_id(rows))
        .await?;
    for chunk in ids.chunks(BATCH_PARAMS) {
        let marks = vec!["?"; chunk.len()].join(", ");
        let values: Vec<V> = chunk.iter().map(|i| V::T(Some(i.clone()))).collect();
        tx.exec(
            &format!("DELETE FROM agent_roles WHERE agent_id IN ({marks})"),
            &values,
        )
        .await?;
        tx.exec(
            &format!("DELETE FROM agent_managed WHERE manager_id IN ({marks})"),
            &values,
        )
        .await?;
    }
    tx.insert_rows(
        "agent_roles",
        &["agent_id", "role"],
        "ON CONFLICT DO NOTHING",
        &roles,
    )
    .await?;
    tx.insert_rows(
        "agent_managed",
        &["manager_id", "agent_id"],
        "ON CONFLICT DO NOTHING",
        &managed,
    )
    .await?;
    Ok(())
}

/// Loans: the last line of each id, with the totals' key values they leave and take, and
/// their history's snapshot columns brought up to date.
async fn write_loans(
    tx: &mut Tx,
    rows: Vec<Vec<V>>,
    history_empty: bool,
    stale: &mut Stale,
) -> Result<(), ImportError> {
    let rows = last_per_id(rows);
    let keys = tx.loan_keys(&first_texts(&rows)).await?;
    let (rows, batch_keys) = with_keys(rows, &keys);
    let mut cols = vec!["key"];
    cols.extend(LOAN_COLUMNS);
    // The totals' key values the loans leave, and then those they take.
    if !stale.totals_all {
        tx.note_totals(&batch_keys, stale).await?;
    }
    tx.insert_rows("loans", &cols, &upsert_tail(&cols), &rows)
        .await?;
    if !stale.totals_all {
        tx.note_totals(&batch_keys, stale).await?;
    }
    if !history_empty {
        tx.sync_history(&batch_keys, stale).await?;
    }
    stale.loans.extend(&batch_keys);
    Ok(())
}

/// LOS history rows, with the columns of their loan and periods, and what each adds to its
/// period sets.
async fn write_history(
    tx: &mut Tx,
    rows: Vec<Vec<V>>,
    history_empty: bool,
    stale: &mut Stale,
) -> Result<(), ImportError> {
    let keys = tx.loan_keys(&first_texts(&rows)).await?;
    let (rows, batch_keys) = with_keys(rows, &keys);
    let amounts = tx.snapshot_amounts(&batch_keys).await?;
    // (key, id, status, at) → (key, status, at, amount, in snapshot,
    // month, week, status bit), and what each row adds to its period sets.
    let (rows, sets): (Vec<Vec<V>>, Vec<SetRow>) = rows
        .into_iter()
        .zip(&batch_keys)
        .map(|(mut r, key)| {
            r.remove(1);
            let (bit, at) = match (&r[1], &r[2]) {
                (V::T(Some(status)), V::I(Some(at))) => (history_keys::status_bit(status), *at),
                _ => unreachable!("history rows have a status and an instant"),
            };
            let amount = amounts.get(key).copied().flatten();
            let in_snapshot = i64::from(amounts.contains_key(key));
            let set = SetRow {
                periods: [history_keys::month_index(at), history_keys::week_index(at)],
                loan_key: *key,
                bit,
                amount,
                in_snapshot,
            };
            r.push(V::I(amount));
            r.push(V::I(Some(in_snapshot)));
            r.push(V::I(Some(set.periods[0])));
            r.push(V::I(Some(set.periods[1])));
            r.push(V::I(Some(bit)));
            (r, set)
        })
        .unzip();
    tx.insert_rows(
        "los_status_history",
        &[
            "loan_key",
            "status",
            "occurred_at",
            "loan_amount",
            "in_snapshot",
            "month_index",
            "week_index",
            "status_bit",
        ],
        "ON CONFLICT DO NOTHING",
        &rows,
    )
    .await?;
    if !history_empty {
        stale.loans.extend(&batch_keys);
        tx.add_to_history_sets(&sets).await?;
        for set in &sets {
            for (periods, period) in stale.periods.iter_mut().zip(set.periods) {
                periods.insert(period);
            }
        }
    }
    Ok(())
}

/// Warehouse milestones, whose periods are counted again.
async fn write_milestones(
    tx: &mut Tx,
    rows: Vec<Vec<V>>,
    stale: &mut Stale,
) -> Result<(), ImportError> {
    let keys = tx.loan_keys(&first_texts(&rows)).await?;
    let (rows, _) = with_keys(rows, &keys);
    let rows: Vec<Vec<V>> = rows
        .into_iter()
        .map(|mut r| {
            r.remove(1);
            // (key, milestone, at): the periods of `at` are counted again.
            if let V::I(Some(at)) = r[2] {
                stale.warehouse_at(MILESTONES, at);
            }
            r
        })
        .collect();
    tx.insert_rows(
        "dw_loan_milestones",
        &["loan_key", "milestone", "occurred_at"],
        "ON CONFLICT DO NOTHING",
        &rows,
    )
    .await?;
    Ok(())
}

/// MLO deals: the last line of each id, counted in the periods they come in and taken out
/// of the ones they were in.
async fn write_deals(tx: &mut Tx, rows: Vec<Vec<V>>, stale: &mut Stale) -> Result<(), ImportError> {
    let cols = ["id", "created_at", "stage"];
    let rows = last_per_id(rows);
    // A deal is counted in the periods it comes in (migration 0011) and, when
    // it was there before, taken out of the ones it was in.
    let ids: Vec<V> = rows.iter().map(|r| r[0].clone()).collect();
    for at in tx.deal_instants(&ids).await? {
        stale.warehouse_at(DEALS, at);
    }
    for r in &rows {
        if let V::I(Some(at)) = r[1] {
            stale.warehouse_at(DEALS, at);
        }
    }
    tx.insert_rows("dw_deals", &cols, &upsert_tail(&cols), &rows)
        .await?;
    Ok(())
}
