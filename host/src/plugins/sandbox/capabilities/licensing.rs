//! `loan:reporting/licensing` (1.2.0): users' state licences. Checks the `user-licenses` grant
//! before anything is read, then the spec's per-user access check on every call
//! (`crate::data::licensing`: the caller's own; any agent's for Admin; a ConciergeKey's managed
//! agents'; no Processor branch); a user the caller may not read answers as an unknown one.
//! The licences count as rows of the call.

use crate::data::catalog::Dataset;
use crate::data::licensing;
use crate::data::values::parse_uuid;
use crate::plugins::sandbox::bindings::v1_2::licensing as wit;
use crate::plugins::sandbox::state::PluginState;

use super::data::Refusal;

impl wit::Host for PluginState {
    async fn user_licenses(
        &mut self,
        user_id: Option<String>,
    ) -> wasmtime::Result<Result<Option<wit::LicensesOf>, wit::LicensingError>> {
        self.mark("data-entered");
        let answer = self.licenses_unmarked(user_id).await;
        self.mark("data-left");
        answer
    }
}

impl PluginState {
    async fn licenses_unmarked(
        &mut self,
        user_id: Option<String>,
    ) -> wasmtime::Result<Result<Option<wit::LicensesOf>, wit::LicensingError>> {
        use wit::LicensingError as E;
        let Some(call) = self.call.as_ref() else {
            return Err(super::no_call_in_describe("licensing.user-licenses"));
        };
        let identity = call.identity.clone();
        let dataset = match self.granted(Dataset::UserLicenses.as_str()) {
            Ok((dataset, _)) => dataset,
            Err(r) => return Ok(Err(licensing_error(r))),
        };
        let user = match user_id {
            None => identity.user_id.clone(),
            Some(u) => match parse_uuid(&u) {
                Some(u) => u,
                None => return Ok(Err(E::InvalidQuery(format!("user id `{u}` is not a UUID")))),
            },
        };
        let reports = match self.store(dataset) {
            Ok(reports) => reports,
            Err(r) => return Ok(Err(licensing_error(r))),
        };
        let db = reports.db.clone();
        let who = user.clone();
        let read = async move { licensing::readable(&db, &identity, &who).await };
        let licenses = match self.budgeted("reading licences", read).await? {
            Ok(licenses) => licenses,
            Err(e) => {
                tracing::error!(error = %e, "cannot read licences");
                return Ok(Err(E::Unavailable(
                    "the data store could not read licences".into(),
                )));
            }
        };
        let Some(licenses) = licenses else {
            return Ok(Ok(None));
        };
        let bytes = licenses
            .iter()
            .map(|l| {
                l.state.len()
                    + l.number.as_ref().map_or(0, String::len)
                    + l.expiration_year.as_ref().map_or(0, String::len)
            })
            .sum::<usize>() as u64;
        self.count_rows(licenses.len() as u64, bytes)?;
        Ok(Ok(Some(wit::LicensesOf {
            user_id: user,
            licenses: licenses
                .into_iter()
                .map(|l| wit::License {
                    state: l.state,
                    state_license_number: l.number,
                    expiration_year: l.expiration_year,
                })
                .collect(),
        })))
    }
}

/// A refusal in `licensing`'s terms.
fn licensing_error(r: Refusal) -> wit::LicensingError {
    match r {
        Refusal::Denied(m) => wit::LicensingError::Denied(m),
        Refusal::InvalidQuery(m) => wit::LicensingError::InvalidQuery(m),
        Refusal::Unavailable(m) => wit::LicensingError::Unavailable(m),
    }
}
