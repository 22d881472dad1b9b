//! The fields of the dataset `loan-applications` (schema v21): an application's parts (each a
//! JSON document the import validated against the shared models) and a few of its loan's. No
//! field holds a borrower's sensitive data: the store never receives it (decision 0046).

use super::catalog::{
    borrower_field, f, id_field, name_field, Field,
    FieldType::{Decimal, Instant, Text},
};

/// Fields of a loan application (alias `a`) and of its loan (alias `l`). Each part is a JSON
/// document the import validated against the shared models.
pub(super) const APPLICATION_FIELDS: &[Field] = &[
    id_field("id", "a.id"),
    id_field("loanId", "l.id"),
    id_field("loanNumber", "l.loan_number"),
    f("status", "a.status", Text),
    f("created", "a.created", Instant),
    f("updated", "a.updated", Instant),
    f("application", "a.application", Text),
    name_field("updatedByName", "a.updated_by_name"),
    borrower_field("borrower", "a.borrower"),
    f("sections", "a.sections", Text),
    f("tasks", "a.tasks", Text),
    f("documents", "a.documents", Text),
    f("timeline", "a.timeline", Text),
    name_field("contacts", "a.contacts"),
    f("contactRoles", "a.contact_roles", Text),
    name_field("referredBy", "a.referred_by"),
    f("loanStatus", "l.status", Text),
    f("loanPurpose", "l.purpose", Text),
    f("loanAmount", "l.loan_amount", Decimal),
    f("propertyState", "l.property_state", Text),
    f("loanOfficerId", "l.loan_officer_id", Text),
    name_field("loanOfficerName", "l.loan_officer_name"),
    borrower_field("borrowerFirstName", "l.borrower_first_name"),
    borrower_field("borrowerLastName", "l.borrower_last_name"),
];
