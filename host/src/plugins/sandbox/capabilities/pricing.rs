//! `loan:reporting/pricing` (1.2.0): indicative prices from the rate sheet. Checks the
//! `rate-sheet` grant before anything is read; the host (`crate::data::pricing`) refuses a
//! scenario unless the caller holds a licence in its property state that has not expired (today
//! as the host's clock says). The prices count as rows of the call.

use crate::data::catalog::Dataset;
use crate::data::pricing::{self, PricingError, Scenario};
use crate::data::values::format_decimal;
use crate::plugins::sandbox::bindings::v1_2::pricing as wit;
use crate::plugins::sandbox::state::PluginState;

use super::data::Refusal;

impl wit::Host for PluginState {
    async fn quote(
        &mut self,
        s: wit::Scenario,
    ) -> wasmtime::Result<Result<wit::Priced, wit::PricingError>> {
        self.mark("data-entered");
        let answer = self.quote_unmarked(s).await;
        self.mark("data-left");
        answer
    }
}

impl PluginState {
    async fn quote_unmarked(
        &mut self,
        s: wit::Scenario,
    ) -> wasmtime::Result<Result<wit::Priced, wit::PricingError>> {
        use wit::PricingError as E;
        let Some(call) = self.call.as_ref() else {
            return Err(super::no_call_in_describe("pricing.quote"));
        };
        let me = call.identity.user_id.clone();
        let dataset = match self.granted(Dataset::RateSheet.as_str()) {
            Ok((dataset, _)) => dataset,
            Err(r) => return Ok(Err(pricing_error(r))),
        };
        let reports = match self.store(dataset) {
            Ok(reports) => reports,
            Err(r) => return Ok(Err(pricing_error(r))),
        };
        let scenario = Scenario {
            property_state: s.property_state,
            loan_amount: s.loan_amount,
            property_value: s.property_value,
            ltv: s.ltv,
            credit_score: s.credit_score,
            loan_type: s.loan_type,
            purpose: s.purpose,
            occupancy: s.occupancy,
            term_months: s.term_months,
            lock_days: s.lock_days,
        };
        let year = self.clock.today().year();
        let db = reports.db.clone();
        let read = async move { pricing::quote(&db, &me, year, &scenario).await };
        let priced = match self.budgeted("pricing a scenario", read).await? {
            Ok(priced) => priced,
            Err(PricingError::Invalid(m)) => return Ok(Err(E::InvalidQuery(m))),
            Err(PricingError::NotLicensed(m)) => return Ok(Err(E::NotLicensed(m))),
            Err(PricingError::Db(e)) => {
                tracing::error!(error = %e, "cannot read the rate sheet");
                return Ok(Err(E::Unavailable(
                    "the data store could not read the rate sheet".into(),
                )));
            }
        };
        let bytes = priced
            .quotes
            .iter()
            .map(|q| (q.product.len() + q.effective_date.len() + 16) as u64)
            .sum();
        self.count_rows(priced.quotes.len() as u64, bytes)?;
        Ok(Ok(wit::Priced {
            ltv: format_decimal(i128::from(priced.ltv)),
            quotes: priced
                .quotes
                .into_iter()
                .map(|q| wit::ProductPrice {
                    product: q.product,
                    rate: format_decimal(i128::from(q.rate)),
                    points: format_decimal(i128::from(q.points)),
                    effective_date: q.effective_date,
                })
                .collect(),
        }))
    }
}

/// A refusal in `pricing`'s terms.
fn pricing_error(r: Refusal) -> wit::PricingError {
    match r {
        Refusal::Denied(m) => wit::PricingError::Denied(m),
        Refusal::InvalidQuery(m) => wit::PricingError::InvalidQuery(m),
        Refusal::Unavailable(m) => wit::PricingError::Unavailable(m),
    }
}
