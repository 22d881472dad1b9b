//! Licensing and opportunity models.

use uuid::Uuid;

closed_model! {
    /// `GetUserLicensesResponse` (closed): the state licenses of one user.
    pub struct GetUserLicensesResponse {
        pub user_id: Uuid,
        pub count: i32,
        pub licenses: Option<Vec<UserLicenseInfo>>,
    }
}

closed_model! {
    /// `UserLicenseInfo` (closed): one state license.
    pub struct UserLicenseInfo {
        /// A 2-letter state code, matching the property state passed to `search_pricing`.
        pub state: Option<String>,
        pub state_license_number: Option<String>,
        pub expiration_year: Option<String>,
    }
}

closed_model! {
    /// `OpportunityTypeModel` (closed).
    pub struct OpportunityTypeModel {
        pub name: Option<String>,
        pub short_name: Option<String>,
    }
}
