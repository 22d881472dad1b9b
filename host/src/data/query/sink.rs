//! Where a statement's rows go as they arrive: the host's fold of period sets, the host's
//! order of groups, or straight into the call's intake; the totals row kept aside.

use super::compiled::Compiled;
use super::fold::SetFold;
use super::host_order::HostOrder;
use super::intake::Allowance;
use super::intake::Fetched;
use super::intake::Intake;
use super::ir::QueryError;
use super::ir::Value;
use super::order::TOTALS_ROW;

/// Where one attempt at a statement puts its rows: a fold of the period sets into the
/// result's groups, or the host's order of a statement's groups, which reach the intake at the
/// end; or the result as they come (a statement that orders and counts its own groups, as the
/// tests' `engine_order`). Made anew for every attempt, so that a retried statement folds
/// nothing twice.
pub(super) struct Sink {
    intake: Intake,
    fold: Option<SetFold>,
    order: Option<HostOrder>,
}

impl Sink {
    pub(super) fn new(c: &Compiled, allowance: Allowance) -> Sink {
        Sink {
            intake: Intake::new(allowance),
            fold: c.fold.clone(),
            order: c.order.clone(),
        }
    }

    /// Whether the statement's rows carry its count of groups after their columns (and a
    /// row of totals may follow them): only a statement that orders and counts its own groups
    /// (the tests' `engine_order`). The executors read that column only then: reading a column
    /// a row does not have builds an error, once per row (5 % of the server's profile samples
    /// for an Admin's 5,869 officers under a wide filter, PostgreSQL).
    pub(super) fn counts_groups(&self) -> bool {
        self.fold.is_none() && self.order.is_none()
    }

    /// Whether no row has arrived yet.
    pub(super) fn is_empty(&self) -> bool {
        self.intake.rows.is_empty()
            && self.fold.as_ref().is_none_or(SetFold::is_empty)
            && self.order.as_ref().is_none_or(HostOrder::is_empty)
    }

    /// One decoded statement row, with the statement's total of groups (when it counts them),
    /// or the row of totals after them ([`TOTALS_ROW`]): kept aside, not a group.
    pub(super) fn push(&mut self, values: Vec<Value>, total: i64) -> Result<(), QueryError> {
        if total == TOTALS_ROW {
            self.intake.totals = Some(values);
            return Ok(());
        }
        match (&mut self.fold, &mut self.order) {
            (Some(fold), _) => fold.add(values),
            (None, Some(order)) => {
                order.add(values);
                Ok(())
            }
            (None, None) => self.intake.push(values, total),
        }
    }

    /// What the statement delivered.
    pub(super) fn finish(mut self) -> Result<Fetched, QueryError> {
        let needs_full = self.fold.as_ref().is_some_and(SetFold::needs_full);
        if needs_full {
            // Nothing reached the intake: the fold's groups are not the answer.
            let mut fetched = self.intake.finish();
            fetched.needs_full = true;
            return Ok(fetched);
        }
        if let Some(fold) = self.fold.take() {
            fold.finish(&mut self.intake)?;
        }
        if let Some(order) = self.order.take() {
            order.finish(&mut self.intake)?;
        }
        Ok(self.intake.finish())
    }
}
