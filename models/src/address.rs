//! The address family (all closed): `Address` and the models that carry its six fields.
//!
//! The six fields are written out in each model rather than flattened from `Address`: the
//! models are flat on the wire, and serde's `flatten` cannot be combined with
//! `deny_unknown_fields`, which is what makes a model closed. (`LoanEstimateDates` and
//! `ClosingDisclosureDates` repeat their shared fields for the same reason.)

use crate::parts::{FieldType, Liability};

closed_model! {
    /// `Address` (closed).
    pub struct Address {
        pub external_id: Option<String>,
        pub street: Option<String>,
        pub city: Option<String>,
        pub state: Option<String>,
        pub zip_code: Option<String>,
        pub country_code: Option<String>,
    }
}

closed_model! {
    /// `Residence` (closed): a current or previous home, with the six `Address` fields.
    pub struct Residence {
        pub residency_duration_in_months: Option<i32>,
        pub residency_type: Option<String>,
        pub monthly_rent: Option<f64>,
        pub start_date: Option<String>,
        pub end_date: Option<String>,
        pub external_id: Option<String>,
        pub street: Option<String>,
        pub city: Option<String>,
        pub state: Option<String>,
        pub zip_code: Option<String>,
        pub country_code: Option<String>,
    }
}

closed_model! {
    /// `MailingAddress` (closed), with the six `Address` fields.
    pub struct MailingAddress {
        pub is_the_same_as_current_address: bool,
        pub is_the_same_as_subject_property_address: bool,
        pub external_id: Option<String>,
        pub street: Option<String>,
        pub city: Option<String>,
        pub state: Option<String>,
        pub zip_code: Option<String>,
        pub country_code: Option<String>,
    }
}

closed_model! {
    /// `OwnedProperty` (closed): real estate a borrower owns, with the six `Address` fields.
    pub struct OwnedProperty {
        pub external_label: Option<String>,
        pub disposition_status: FieldType,
        pub occupancy: FieldType,
        pub market_value: Option<f64>,
        pub monthly_rental_gross: f64,
        pub maintenance_expense: Option<f64>,
        pub is_subject: bool,
        pub is_current: bool,
        pub liability: Liability,
        pub external_id: Option<String>,
        pub street: Option<String>,
        pub city: Option<String>,
        pub state: Option<String>,
        pub zip_code: Option<String>,
        pub country_code: Option<String>,
    }
}
