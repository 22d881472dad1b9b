//! The fields of the datasets only a capability reads, never a query or a list: the people of
//! a scope (`people.search`), users' licences (`licensing.user-licenses`) and the rate sheet
//! (`pricing.quote`). They are in the catalog for the grants and the exposure table; their
//! columns name what the capability reads.

use super::catalog::{
    f, id_field, name_field, Field,
    FieldType::{Decimal, Text},
};

/// Fields of a person (`data::people`: its rows are built by the search, never compiled).
pub(super) const PEOPLE_FIELDS: &[Field] = &[
    id_field("id", "p.id"),
    f("isCaller", "p.is_caller", Text),
    f("parts", "p.parts", Text),
    name_field("name", "p.name"),
];

/// Fields of a licence (`data::licensing`: read by the capability, never compiled).
pub(super) const LICENSE_FIELDS: &[Field] = &[
    f("userId", "u.user_id", Text),
    f("state", "u.state", Text),
    f("stateLicenseNumber", "u.license_number", Text),
    f("expirationYear", "u.expiration_year", Text),
];

/// Fields of a quote (`data::pricing`: read by the capability, never compiled).
pub(super) const RATE_FIELDS: &[Field] = &[
    f("product", "r.product", Text),
    f("rate", "r.rate", Decimal),
    f("points", "r.points", Decimal),
    f("effectiveDate", "r.effective_date", Text),
];
