//! `Application`: a connected application, such as the loan-origination system.

use uuid::Uuid;

closed_model! {
    /// `Application` (closed).
    pub struct Application {
        pub id: Uuid,
        pub r#type: Option<String>,
        pub name: Option<String>,
    }
}
