//! `Borrower` and its parts (all closed).

use uuid::Uuid;

use crate::address::{Address, MailingAddress, OwnedProperty, Residence};
use crate::contacts::Contacts;
use crate::parts::{FieldType, Liability};

closed_model! {
    /// `Borrower` (closed): a borrower of a loan application, with an optional co-borrower.
    pub struct Borrower {
        pub hd_borrower_id: Option<Uuid>,
        pub client_id: Option<Uuid>,
        pub external_id: Option<String>,
        pub external_label: Option<String>,
        pub first_name: Option<String>,
        pub last_name: Option<String>,
        pub middle_name: Option<String>,
        pub contacts: Contacts,
        pub marital_status: FieldType,
        pub citizenship: FieldType,
        pub birth_date: Option<String>,
        pub language: Language,
        pub is_military: Option<bool>,
        pub current_address: Residence,
        pub mailing_address: MailingAddress,
        pub previous_addresses: Vec<Residence>,
        pub owned_properties: Vec<OwnedProperty>,
        pub declaration: Declaration,
        pub demographics: Demographics,
        pub employments: Vec<Employment>,
        pub other_incomes: Vec<Income>,
        pub liabilities: Vec<Liability>,
        pub veteran_detail: VeteranDetail,
        pub credit_scores: Vec<CreditScore>,
        pub hmda_applicant_credit_score: HmdaApplicantCreditScore,
        pub credit_authorization_date: Option<String>,
        pub is_beta: Option<bool>,
        pub fico: Option<i32>,
        pub soft_credit_external_id: Option<String>,
        pub is_primary: bool,
        pub borrower_type: Option<String>,
        pub assets: Vec<Asset>,
        pub number_of_dependents: Option<i32>,
        pub dependent_ages: Option<String>,
        pub ssn: Option<String>,
        pub encrypted_ssn: Option<String>,
        /// The co-borrower, a `Borrower` itself. The spec does not mark it nullable, so `null`
        /// is refused; it may be left out (a chain of co-borrowers has to end).
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "crate::formats::absent_not_null::deserialize"
        )]
        #[schemars(with = "Borrower")]
        pub co_borrower: Option<Box<Borrower>>,
    }
}

closed_model! {
    /// `Language` (closed): the borrower's preferred language.
    pub struct Language {
        pub code: Option<String>,
        pub other_description: Option<String>,
        pub refuse_to_answer: bool,
    }
}

closed_model! {
    /// `Asset` (closed): an account or other asset.
    pub struct Asset {
        pub institution_name: Option<String>,
        pub account_number: Option<String>,
        pub amount: f64,
        pub account_name: Option<String>,
        pub account_holder_name: Option<String>,
        pub source: Option<String>,
        pub gift_source: Option<String>,
        pub temporary_id: Option<String>,
        pub asset_account_id: Uuid,
        pub external_id: Option<String>,
        pub name: Option<String>,
    }
}

closed_model! {
    /// `Income` (closed).
    pub struct Income {
        pub amount: f64,
        pub other_description: Option<String>,
        pub is_associated_with_employment: bool,
        pub external_id: Option<String>,
        pub name: Option<String>,
    }
}

closed_model! {
    /// `Employment` (closed).
    pub struct Employment {
        pub external_id: Option<String>,
        pub is_current: bool,
        pub is_self_employed: bool,
        pub ownership_share: FieldType,
        pub is_primary: Option<bool>,
        pub name: Option<String>,
        pub position: Option<String>,
        pub address: Address,
        pub start_date: Option<String>,
        pub end_date: Option<String>,
        pub profession_start_date: Option<String>,
        pub line_of_work_in_months: Option<i32>,
        pub business_phone: Option<String>,
        pub email: Option<String>,
        pub monthly_income_amount: Option<f64>,
        pub incomes: Vec<Income>,
    }
}

closed_model! {
    /// `Declaration` (closed): the borrower's declarations.
    pub struct Declaration {
        pub has_intent_to_occupy: bool,
        pub is_homeowner_past_three_years: bool,
        pub is_buyer_seller_special_relationship: bool,
        pub has_undisclosed_borrowed_funds: bool,
        pub has_undisclosed_credit_application: bool,
        pub has_undisclosed_mortgage_application: bool,
        pub has_clean_energy_lien: bool,
        pub is_undisclosed_comaker_of_note: bool,
        pub has_outstanding_judgements: bool,
        pub is_delinquent: bool,
        pub is_party_to_lawsuit: bool,
        pub has_deed_in_lieu: bool,
        pub has_short_sale: bool,
        pub has_foreclosure: bool,
        pub has_bankruptcy: bool,
        pub has_housing_counseling_consent: bool,
        pub prior_property_usage: FieldType,
        pub prior_property_title: FieldType,
        pub undisclosed_borrowed_funds_amount: Option<f64>,
        pub bankruptcy_types: Option<Vec<String>>,
    }
}

closed_model! {
    /// `Demographics` (closed): government-monitoring information.
    pub struct Demographics {
        pub ethnicity: Ethnicity,
        pub gender: FieldType,
        pub races: Vec<Race>,
        pub application_taken: FieldType,
        pub has_refused_to_disclose_race: bool,
        pub has_refused_to_disclose_gender: bool,
        pub has_refused_to_disclose_ethnicity: bool,
        pub is_race_based_on_visual_or_surname: bool,
        pub is_gender_based_on_visual_or_surname: bool,
        pub is_ethnicity_based_on_visual_or_surname: bool,
    }
}

closed_model! {
    /// `Ethnicity` (closed).
    pub struct Ethnicity {
        pub origins: Vec<EthnicityOrigin>,
        pub external_id: Option<String>,
        pub name: Option<String>,
    }
}

closed_model! {
    /// `EthnicityOrigin` (closed).
    pub struct EthnicityOrigin {
        pub other_description: Option<String>,
        pub external_id: Option<String>,
        pub name: Option<String>,
    }
}

closed_model! {
    /// `Race` (closed).
    pub struct Race {
        pub race_designations: Vec<RaceDesignation>,
        pub additional_description: Option<String>,
        pub external_id: Option<String>,
        pub name: Option<String>,
    }
}

closed_model! {
    /// `RaceDesignation` (closed).
    pub struct RaceDesignation {
        pub other_description: Option<String>,
        pub external_id: Option<String>,
        pub name: Option<String>,
    }
}

closed_model! {
    /// `VeteranDetail` (closed).
    pub struct VeteranDetail {
        pub is_veteran: bool,
        pub active_duty: bool,
        pub retired_discharged_or_separated: bool,
        pub reserve_national_guard_never_activated: bool,
        pub is_surviving_spouse_of_veteran: bool,
        pub active_duty_expiration_date: Option<String>,
        pub service_type: FieldType,
    }
}

closed_model! {
    /// `CreditScore` (closed).
    pub struct CreditScore {
        pub source: Option<String>,
        pub score: Option<String>,
        pub credit_score_impairment_type: Option<String>,
    }
}

closed_model! {
    /// `HmdaApplicantCreditScore` (closed).
    pub struct HmdaApplicantCreditScore {
        pub relied_on_credit_score: Option<i32>,
        pub relied_on_credit_score_mode: Option<String>,
        pub relied_on_credit_score_model_type: Option<String>,
    }
}
