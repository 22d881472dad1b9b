//! `loan:reporting/people` (1.2.0): the people on the loans of the caller's scope. Checks the
//! `people` grant (a listing grant naming `id`, `isCaller` and `parts`; `name` to read names)
//! before anything answers, resolves the caller's scope (on every call), searches
//! (`crate::data::people`) within the call's budgets, and counts the people as rows of the
//! call and in its audit line. Names only for a caller who may read them under a grant of
//! `name`. Spent budgets trap as for `data`.

use crate::data::catalog::Dataset;
use crate::data::people::{self, Part, PeopleError, PeopleQuery};
use crate::data::scope::Scope;
use crate::plugins::sandbox::bindings::v1_2::people as wit;
use crate::plugins::sandbox::state::PluginState;

use super::data::Refusal;

/// The fields every search returns, which the grant must name.
const RETURNED: [&str; 3] = ["id", "isCaller", "parts"];

impl wit::Host for PluginState {
    async fn search(
        &mut self,
        q: wit::PeopleQuery,
    ) -> wasmtime::Result<Result<wit::Found, wit::PeopleError>> {
        self.mark("data-entered");
        let answer = self.search_unmarked(q).await;
        self.mark("data-left");
        answer
    }
}

impl PluginState {
    async fn search_unmarked(
        &mut self,
        q: wit::PeopleQuery,
    ) -> wasmtime::Result<Result<wit::Found, wit::PeopleError>> {
        use wit::PeopleError as E;
        let Some(call) = self.call.as_ref() else {
            return Err(super::no_call_in_describe("people.search"));
        };
        let (dataset, grant) = match self.granted(Dataset::People.as_str()) {
            Ok(granted) => granted,
            Err(r) => return Ok(Err(people_error(r))),
        };
        if !grant.listing {
            let m = "dataset `people` is searched only under a listing grant \
                     (`[datasets.people] listing = true` in the manifest)"
                .to_string();
            return Ok(Err(people_error(self.denied(m))));
        }
        if let Some(missing) = RETURNED.iter().find(|f| !grant.names(f)) {
            let m = format!(
                "field `{missing}` of dataset `people` is not granted; a search returns {}",
                RETURNED.join(", ")
            );
            return Ok(Err(people_error(self.denied(m))));
        }
        let with_names = grant.names("name") && call.identity.can_read_names();
        if !q.name_tokens.is_empty() && !grant.names("name") {
            let m = "searching people by name needs field `name` of dataset `people` granted"
                .to_string();
            return Ok(Err(people_error(self.denied(m))));
        }
        let search = PeopleQuery {
            tokens: q.name_tokens,
            parts: q.parts.into_iter().map(part).collect(),
            limit: q.limit,
        };
        if let Err(e) = search.check(call.identity.can_read_names()) {
            return Ok(Err(match e {
                PeopleError::Denied(m) => E::Denied(m),
                other => E::InvalidQuery(other.to_string()),
            }));
        }
        let reports = match self.store(dataset) {
            Ok(reports) => reports,
            Err(r) => return Ok(Err(people_error(r))),
        };
        let identity = call.identity.clone();
        let db = reports.db.clone();
        let read = async move {
            let scope = Scope::resolve(&db, &identity).await?;
            people::search(&db, &scope, &identity.user_id, &search, with_names).await
        };
        let found = match self.budgeted("searching people", read).await? {
            Ok(found) => found,
            Err(e) => {
                tracing::error!(error = %e, "cannot search people");
                return Ok(Err(E::Unavailable(
                    "the data store could not search people".into(),
                )));
            }
        };
        let bytes = found
            .people
            .iter()
            .map(|p| (p.id.len() + p.name.as_ref().map_or(0, String::len)) as u64)
            .sum::<u64>();
        self.count_rows(found.people.len() as u64, bytes)?;
        self.usage.people += found.people.len() as u64;
        Ok(Ok(wit::Found {
            total: found.total,
            people: found
                .people
                .into_iter()
                .map(|p| wit::Person {
                    id: p.id,
                    is_caller: p.is_caller,
                    parts: Part::of(p.parts).into_iter().map(wit_part).collect(),
                    name: p.name,
                })
                .collect(),
        }))
    }
}

/// A refusal in `people`'s terms.
fn people_error(r: Refusal) -> wit::PeopleError {
    match r {
        Refusal::Denied(m) => wit::PeopleError::Denied(m),
        Refusal::InvalidQuery(m) => wit::PeopleError::InvalidQuery(m),
        Refusal::Unavailable(m) => wit::PeopleError::Unavailable(m),
    }
}

fn part(p: wit::Part) -> Part {
    match p {
        wit::Part::LoanOfficer => Part::LoanOfficer,
        wit::Part::LoanAssistant => Part::LoanAssistant,
        wit::Part::Processor => Part::Processor,
        wit::Part::ReferringAgent => Part::ReferringAgent,
    }
}

fn wit_part(p: Part) -> wit::Part {
    match p {
        Part::LoanOfficer => wit::Part::LoanOfficer,
        Part::LoanAssistant => wit::Part::LoanAssistant,
        Part::Processor => wit::Part::Processor,
        Part::ReferringAgent => wit::Part::ReferringAgent,
    }
}
