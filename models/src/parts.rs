//! Parts that several models share: `FieldType` (a coded value with its display name) and
//! `Liability` with its `BorrowerExternalId` (the address family and the borrower family both
//! hold them). Their own module, so neither family imports the other.

use uuid::Uuid;

closed_model! {
    /// `FieldType` (closed): a coded value with its display name.
    pub struct FieldType {
        pub external_id: Option<String>,
        pub name: Option<String>,
    }
}

closed_model! {
    /// `Liability` (closed): a debt.
    pub struct Liability {
        pub amount: f64,
        pub temporary_id: Option<String>,
        pub is_deleted: bool,
        pub borrower_external_id: BorrowerExternalId,
        /// The identifier of the liability in the document store.
        pub store_liability_id: Uuid,
        pub creditor_name: Option<String>,
        pub description: Option<String>,
        pub external_id: Option<String>,
        pub name: Option<String>,
    }
}

closed_model! {
    /// `BorrowerExternalId` (closed).
    pub struct BorrowerExternalId {
        pub external_id: Option<String>,
        pub is_primary: bool,
    }
}
