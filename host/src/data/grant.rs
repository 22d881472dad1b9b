//! What a plugin may read of one dataset: the fields its manifest names and whether it may
//! list (read identifying fields), checked against every query before it is compiled, whatever
//! capability sent it.

use std::collections::BTreeSet;

use super::catalog::Dataset;
use super::query::{Aggregate, Key, ListQuery, Query};

/// One dataset's grant, as a manifest declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The dataset granted.
    pub dataset: Dataset,
    /// The fields the plugin may read (catalog names; `loan.<f>` for history's loan fields).
    pub fields: BTreeSet<String>,
    /// Whether the plugin may read, group on, compare and return the fields that identify a
    /// loan or a deal ([`super::catalog::Exposure::Identifying`]); without it, it may only
    /// count them.
    pub listing: bool,
}

impl Grant {
    /// Every field of the dataset, aggregate-only: what a manifest that lists datasets
    /// without naming fields (`datasets = ["loans"]`, the form before field grants) is given.
    pub fn every_field(dataset: Dataset) -> Grant {
        Grant {
            dataset,
            fields: dataset.field_names().into_iter().collect(),
            listing: false,
        }
    }

    /// Whether the grant names a field.
    pub fn names(&self, field: &str) -> bool {
        self.fields.contains(field)
    }

    /// Refuses a query that reads a field the grant does not name, or that reads, groups on,
    /// compares or returns an identifying field without a listing grant (counting one is
    /// allowed). The spec's `filter` is the host's to translate and is not checked here.
    /// Unknown fields are left to the compiler, which names the dataset's fields. The error is
    /// the reason, which the plugin is told as `denied`.
    pub fn check(&self, q: &Query) -> Result<(), String> {
        let counted = |field: &str| self.allow(field, true);
        let read = |field: &str| self.allow(field, false);
        for (field, _) in &q.predicates {
            read(field)?;
        }
        for key in &q.group_by {
            read(match key {
                Key::Field(f) | Key::Period(f, _) | Key::Mapped(f, _, _) => f,
            })?;
        }
        if let Some(f) = &q.distinct_on {
            counted(f)?;
        }
        for a in &q.aggregates {
            match a {
                Aggregate::Count => {}
                Aggregate::CountOf(f) | Aggregate::CountDistinct(f) => counted(f)?,
                Aggregate::Sum(f) | Aggregate::Min(f) | Aggregate::Max(f) => read(f)?,
            }
        }
        Ok(())
    }

    /// Refuses a list unless the grant lists the dataset: every field it returns, compares
    /// or orders by must be granted (identifying ones too, under the listing grant).
    pub fn check_list(&self, q: &ListQuery) -> Result<(), String> {
        if !self.listing {
            return Err(format!(
                "dataset `{}` is granted for aggregates only: listing its rows needs a listing \
                 grant (`[datasets.{}] listing = true` in the manifest)",
                self.dataset.as_str(),
                self.dataset.as_str()
            ));
        }
        let order = std::iter::once(q.order.field());
        let predicates = q.predicates.iter().map(|(f, _)| f.as_str());
        for field in q
            .fields
            .iter()
            .map(String::as_str)
            .chain(predicates)
            .chain(order)
        {
            self.allow(field, false)?;
        }
        Ok(())
    }

    fn allow(&self, name: &str, counted: bool) -> Result<(), String> {
        let Some(field) = self.dataset.field(name) else {
            return Ok(());
        };
        if !self.names(name) {
            return Err(format!(
                "field `{name}` of dataset `{}` is not granted to this plugin (its manifest's \
                 fields: {})",
                self.dataset.as_str(),
                self.fields.iter().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        if field.borrower() && !self.listing {
            return Err(format!(
                "field `{name}` of dataset `{}` is a borrower's name: only a plugin with a \
                 listing grant lists it",
                self.dataset.as_str()
            ));
        }
        if field.identifying() && !counted && !self.listing {
            return Err(format!(
                "field `{name}` of dataset `{}` identifies a loan or a deal: only a plugin with a \
                 listing grant reads, groups on or compares it; count it with count-of, \
                 count-distinct or distinct-on",
                self.dataset.as_str()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::query::tests::q as query;
    use crate::data::query::{Condition, Value};

    fn grant(fields: &[&str], listing: bool) -> Grant {
        Grant {
            dataset: Dataset::Loans,
            fields: fields.iter().map(|f| f.to_string()).collect(),
            listing,
        }
    }

    #[test]
    fn fields_outside_the_grant_are_refused_in_every_place_a_query_names_one() {
        // Arrange
        let g = grant(&["status", "loanAmount"], false);
        let mut keyed = query(Dataset::Loans);
        keyed.group_by.push(Key::Field("purpose".into()));
        let mut compared = query(Dataset::Loans);
        compared
            .predicates
            .push(("loanType".into(), Condition::Eq(Value::Text("FHA".into()))));
        let mut summed = query(Dataset::Loans);
        summed
            .aggregates
            .push(Aggregate::Sum("lockedCompensation".into()));
        let mut granted = query(Dataset::Loans);
        granted.group_by.push(Key::Field("status".into()));
        granted.aggregates.push(Aggregate::Sum("loanAmount".into()));

        // Act / Assert
        for q in [&keyed, &compared, &summed] {
            assert!(
                matches!(g.check(q), Err(m) if m.contains("is not granted")),
                "{q:?}"
            );
        }
        assert!(g.check(&granted).is_ok());
    }

    #[test]
    fn identifying_fields_are_counted_without_a_listing_grant_and_read_only_with_one() {
        // Arrange
        let counting = grant(&["id", "loanNumber", "status"], false);
        let listing = grant(&["id", "loanNumber", "status"], true);
        let mut count = query(Dataset::Loans);
        count.aggregates.push(Aggregate::CountDistinct("id".into()));
        count.distinct_on = Some("id".into());
        let mut by_id = query(Dataset::Loans);
        by_id.group_by.push(Key::Field("id".into()));
        let mut by_number = query(Dataset::Loans);
        by_number.predicates.push((
            "loanNumber".into(),
            Condition::Eq(Value::Text("L-1".into())),
        ));
        let mut highest = query(Dataset::Loans);
        highest.aggregates.push(Aggregate::Max("loanNumber".into()));

        // Act / Assert
        assert!(counting.check(&count).is_ok());
        for q in [&by_id, &by_number, &highest] {
            assert!(
                matches!(counting.check(q), Err(m) if m.contains("identifies a loan")),
                "{q:?}"
            );
            assert!(listing.check(q).is_ok(), "{q:?}");
        }
    }

    #[test]
    fn a_manifest_without_fields_is_given_every_field_for_aggregates_only() {
        // Arrange
        let g = Grant::every_field(Dataset::DwDeals);
        let mut count = query(Dataset::DwDeals);
        count.group_by.push(Key::Field("stage".into()));
        count.aggregates.push(Aggregate::CountDistinct("id".into()));
        let mut by_deal = query(Dataset::DwDeals);
        by_deal.group_by.push(Key::Field("id".into()));

        // Act / Assert
        assert!(g.check(&count).is_ok());
        assert!(g.check(&by_deal).is_err());
    }
}
