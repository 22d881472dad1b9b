//! Contacts and roles: `Contact`, `Contacts`, `Assignments` and the `ContactRole` enumeration.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

closed_model! {
    /// `Contact` (closed): a person or company involved in a loan.
    pub struct Contact {
        pub id: Option<Uuid>,
        pub email: Option<String>,
        pub first_name: Option<String>,
        pub last_name: Option<String>,
        pub agent_name: Option<String>,
        pub role_name: Option<String>,
        #[serde(rename = "agentNMLS")]
        pub agent_nmls: Option<String>,
        pub role: ContactRole,
        pub phone: Option<String>,
        pub mobile_phone: Option<String>,
        pub company_phone: Option<String>,
        pub zip: Option<String>,
        pub state: Option<String>,
        pub city: Option<String>,
        pub street: Option<String>,
        #[serde(rename = "companyNMLS")]
        pub company_nmls: Option<String>,
    }
}

closed_model! {
    /// `Contacts` (closed): how to reach a borrower.
    pub struct Contacts {
        pub email: Option<String>,
        pub mobile_phone: Option<String>,
        pub work_phone: Option<String>,
    }
}

closed_model! {
    /// `Assignments` (closed): the people assigned to a loan.
    pub struct Assignments {
        pub loan_officer: Contact,
        pub loan_assistant: Contact,
        pub loan_processor: Contact,
        pub referred_by: Contact,
    }
}

/// `ContactRole`: a contact's role on a loan, a string with one of these values (in the spec's
/// order).
#[allow(clippy::upper_case_acronyms)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ContactRole {
    Other,
    Appraiser,
    Escrow,
    CreditReport,
    Title,
    MortgageInsurance,
    ListingAgent,
    SellingAgent,
    Builder,
    Underwriter,
    Investor,
    Servicing,
    BuyerAttorney,
    SellerAttorney,
    HomeOwnerInsurance,
    HazardInsurance,
    MarketingLead,
    Seller,
    Surveyor,
    LoanOfficer,
    Bank,
    Lender,
    Processor,
    CallCenterAgent,
    LoanOpener,
    Manager,
    Broker,
    BrokerRep,
    ECOA,
    Realtor,
    Mortgagee,
    HomeOwnerAssociation,
    BuyerAgent,
    ClosingAgent,
    FairHousingLending,
    HomeInspection,
    FloodProvider,
    CreditReportAgency2,
    CreditReportAgency3,
    Shipper,
    BrokerProcessor,
    Trustee,
    Funder,
    PostCloser,
    Insuring,
    CollateralAgent,
    DocDrawer,
    PropertyManagement,
    TitleUnderwriter,
    CreditAuditor,
    DisclosureDesk,
    JuniorProcessor,
    JuniorUnderwriter,
    LegalAuditor,
    LoanOfficerAssistant,
    Purchaser,
    QCCompliance,
    Secondary,
    PestInspection,
    Subservicer,
    ExternalSecondary,
    ExternalPostCloser,
    LoanPurchasePayee,
    AppraisalManagementCompany,
    Referral,
    Notary,
    TaxServicer,
    SupervisoryAppraiser,
    Attorney,
    PropertyInspector,
    CPATaxPreparer,
    LockDesk,
    MortgageServiceOrganization,
    Verifications,
    TaxCollector,
    TaxTranscripts,
}
