//! `loan:reporting/listing` (1.2.0): pages of loan rows. Checks the dataset's grant (a listing
//! grant, every field named) before anything answers, opens the cursor the host sealed for
//! this caller, plugin and list, resolves the caller's scope (on every call), runs the page
//! (`crate::data::query::list`) within the call's budgets, counts its rows and names its loans
//! for the audit line, and seals the next page's cursor. Spent budgets trap as for `data`.

use std::time::Instant;

use sha2::{Digest as _, Sha256};

use crate::data::catalog::Dataset;
use crate::data::cursor::Position;
use crate::data::query::{self, ListError, ListOrder, ListQuery, Listed, QueryError, Readers};
use crate::data::scope::Scope;
use crate::plugins::sandbox::bindings::v1_1::data as wit_data;
use crate::plugins::sandbox::bindings::v1_2::listing as wit;
use crate::plugins::sandbox::state::{PluginState, MAX_AUDITED_LOANS};

use super::data::Refusal;
use super::data_wit::{condition_1_1, json_text, value_1_1};

impl wit::Host for PluginState {
    async fn list_page(
        &mut self,
        q: wit::ListQuery,
    ) -> wasmtime::Result<Result<wit::Page, wit::ListError>> {
        self.mark("data-entered");
        let answer = self.list_unmarked(q).await;
        self.mark("data-left");
        Ok(match answer? {
            Ok((listed, next_cursor)) => Ok(wit::Page {
                columns: listed.columns,
                rows: listed
                    .rows
                    .into_iter()
                    .map(|r| r.into_iter().map(value_1_1).collect())
                    .collect(),
                next_cursor,
            }),
            Err(e) => Err(e),
        })
    }

    async fn list_page_json(
        &mut self,
        q: wit::ListQuery,
    ) -> wasmtime::Result<Result<wit::JsonPage, wit::ListError>> {
        self.mark("data-entered");
        let answer = self.list_unmarked(q).await;
        self.mark("data-left");
        Ok(match answer? {
            Ok((listed, next_cursor)) => {
                match json_text(listed.columns.len(), &listed.rows, listed.bytes) {
                    Ok((rows, kinds)) => Ok(wit::JsonPage {
                        columns: listed.columns,
                        kinds,
                        rows,
                        next_cursor,
                    }),
                    Err(m) => Err(wit::ListError::Unavailable(m)),
                }
            }
            Err(e) => Err(e),
        })
    }
}

impl PluginState {
    /// A page and the cursor of the next one, or why not.
    async fn list_unmarked(
        &mut self,
        q: wit::ListQuery,
    ) -> wasmtime::Result<Result<(Listed, Option<String>), wit::ListError>> {
        use wit::ListError as E;
        let Some(call) = self.call.as_ref() else {
            return Err(super::no_call_in_describe("listing.list-page"));
        };
        let (dataset, grant) = match self.granted(&q.dataset) {
            Ok(granted) => granted,
            Err(r) => return Ok(Err(list_error(r))),
        };
        let cursor = q.cursor.clone();
        let list = convert(dataset, q);
        if let Err(m) = grant.check_list(&list) {
            return Ok(Err(list_error(self.denied(m))));
        }
        let reports = match self.store(dataset) {
            Ok(reports) => reports,
            Err(r) => return Ok(Err(list_error(r))),
        };
        let identity = call.identity.clone();
        let binding = binding(&identity.user_id, &self.manifest.name, &list);
        let key = match reports.cursor_key().await {
            Ok(k) => k,
            Err(e) => {
                tracing::error!(error = %e, "cannot read the listing cursors' key");
                return Ok(Err(E::Unavailable(
                    "the data store could not run the list".into(),
                )));
            }
        };
        let after: Option<Position> = match cursor.as_deref() {
            None => None,
            Some(c) => match key.open(&binding, c) {
                Ok(p) => Some(p),
                Err(e) => return Ok(Err(E::BadCursor(e.to_string()))),
            },
        };
        let _statement = self.statement_slot().await?;
        let allowance = self.next_allowance()?;
        let started = Instant::now();
        let outcome = async {
            let scope = match dataset {
                Dataset::LoanApplications => Scope::resolve_per_loan(&reports.db, &identity).await,
                _ => Scope::resolve(&reports.db, &identity).await,
            };
            let scope = scope.map_err(|e| {
                tracing::error!(error = %e, "cannot resolve the caller's scope");
                QueryError::Unavailable("the caller's scope could not be resolved".into())
            })?;
            let _slot = reports
                .admit(scope.all, allowance.deadline)
                .await
                .map_err(|e| QueryError::Timeout(e.to_string()))?;
            query::list(
                &reports.store,
                &list,
                after,
                Some(&scope),
                Readers::of(&identity),
                allowance,
            )
            .await
        }
        .await;
        self.usage.db_time += started.elapsed();
        let listed = match outcome {
            Ok(listed) => listed,
            Err(ListError::Changed) => {
                return Ok(Err(E::StaleCursor(
                    "the loans changed since this list's first page (an import landed): list \
                     again from the first page"
                        .into(),
                )))
            }
            Err(ListError::Query(e)) => return Refusal::of(e).map(|r| Err(list_error(r))),
        };
        let rows = listed.rows.len() as u64;
        self.count_rows(rows, listed.bytes)?;
        self.usage.listed += rows;
        let room = MAX_AUDITED_LOANS.saturating_sub(self.usage.listed_loans.len());
        self.usage
            .listed_loans
            .extend(listed.loan_ids.iter().take(room).cloned());
        let next = listed.next.map(|p| key.seal(&binding, p));
        Ok(Ok((listed, next)))
    }
}

/// A refusal in `listing`'s terms.
fn list_error(r: Refusal) -> wit::ListError {
    match r {
        Refusal::Denied(m) => wit::ListError::Denied(m),
        Refusal::InvalidQuery(m) => wit::ListError::InvalidQuery(m),
        Refusal::Unavailable(m) => wit::ListError::Unavailable(m),
    }
}

/// The list in the host's terms.
fn convert(dataset: Dataset, q: wit::ListQuery) -> ListQuery {
    ListQuery {
        dataset,
        filter: q.filter,
        predicates: q
            .predicates
            .into_iter()
            .map(|p: wit_data::Predicate| (p.field, condition_1_1(p.condition)))
            .collect(),
        fields: q.fields,
        order: match q.order_by {
            wit::OrderOption::Updated => ListOrder::Updated,
            wit::OrderOption::StatusDate => ListOrder::StatusDate,
            wit::OrderOption::Amount => ListOrder::Amount,
            wit::OrderOption::ClosingDate => ListOrder::ClosingDate,
            wit::OrderOption::Commission => ListOrder::Commission,
        },
        descending: q.descending,
        page_size: q.page_size,
    }
}

/// What a cursor is bound to: the caller, the plugin and the list (everything but the page
/// size), hashed. The filter is bound as its JSON value, so the same filter written with its
/// keys in another order or other spacing continues the same list.
fn binding(user_id: &str, plugin: &str, q: &ListQuery) -> Vec<u8> {
    let filter = q
        .filter
        .as_deref()
        .map(|f| match serde_json::from_str::<serde_json::Value>(f) {
            Ok(v) => v.to_string(),
            Err(_) => f.to_string(),
        });
    let described = serde_json::json!([
        user_id,
        plugin,
        q.dataset.as_str(),
        filter,
        format!("{:?}", q.predicates),
        q.fields,
        q.order.as_str(),
        q.descending,
    ]);
    Sha256::digest(described.to_string().as_bytes()).to_vec()
}
