//! The shared models by their spec names, with their JSON Schemas, for the REST API
//! description: one list ([`with_shared_models!`](crate::with_shared_models)), so a model
//! cannot be left out of it.

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{Map, Value};

/// Calls the macro `$m` with every shared model type of the spec, in the spec's order (the
/// types must be in scope where it is called, e.g. by `use loanhost_models::*`): the API
/// description and the models' tests each take the list from here.
#[macro_export]
macro_rules! with_shared_models {
    ($m:ident) => {
        $m!(
            ProblemDetails,
            ValidationProblemDetails,
            Application,
            NotificationSettingsDocument,
            CategorySettings,
            RecipientBranch,
            NotificationSettingsPatchOperation,
            EffectiveNotificationSettings,
            EffectiveNotificationPermissions,
            EffectiveCategory,
            EffectiveBranch,
            EffectiveValue,
            NotificationCatalogResponse,
            NotificationCatalogEntry,
            NotificationCatalogMilestones,
            MilestoneSummary,
            GetUserLicensesResponse,
            UserLicenseInfo,
            OpportunityTypeModel,
            Address,
            Residence,
            MailingAddress,
            OwnedProperty,
            Contact,
            Contacts,
            Assignments,
            ContactRole,
            Borrower,
            FieldType,
            Language,
            Asset,
            Liability,
            BorrowerExternalId,
            Income,
            Employment,
            Declaration,
            Demographics,
            Ethnicity,
            EthnicityOrigin,
            Race,
            RaceDesignation,
            VeteranDetail,
            CreditScore,
            HmdaApplicantCreditScore,
            CreditReportType,
            CustomField,
            DownPaymentSource,
            Document,
            DisclosureTracker,
            LoanEstimateDates,
            ClosingDisclosureDates,
            ConsumerDisclosureDates,
            GetLoanApplicationResponse,
            LoanAppSectionCompletionReport,
            LoanAppSectionCompletion,
            LoanInfo,
            LoanApplicationTaskItem,
            TaskSummary,
            LoanTimeline,
        )
    };
}

use crate::*;

/// Where the API description keeps its schemas; the `$ref`s of the models point there.
pub const COMPONENTS_PATH: &str = "#/components/schemas/";

/// Adds `T`'s schema (and those it refers to) to `out` under `T`'s name.
fn add<T: JsonSchema>(generator: &mut schemars::SchemaGenerator, out: &mut Map<String, Value>) {
    let schema = generator.subschema_for::<T>();
    // A referenceable type answers `{"$ref": …}` and lands among the definitions; a type
    // schemars inlines (none of the models here) would answer its schema itself.
    if schema.get("$ref").is_none() {
        out.insert(T::schema_name().into_owned(), schema.to_value());
    }
}

/// Every shared model's schema by its spec name (`ProblemDetails`, `Borrower`, …), `$ref`s
/// pointing at [`COMPONENTS_PATH`]: the `components.schemas` of the API description. The
/// reporting response records are included too (they are tool results, not REST bodies, but
/// the spec lists them among its models), and so is the token endpoint's request body.
pub fn schemas() -> Map<String, Value> {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.definitions_path = COMPONENTS_PATH.into();
        s.meta_schema = None;
    });
    let mut generator = settings.into_generator();
    let mut out = Map::new();
    {
        let mut one = |f: fn(&mut schemars::SchemaGenerator, &mut Map<String, Value>)| {
            f(&mut generator, &mut out)
        };
        macro_rules! go {
            ($($ty:ty),* $(,)?) => { $( one(add::<$ty>); )* };
        }
        crate::with_shared_models!(go);
        go!(
            reporting::LoanAggregationResponse,
            reporting::LoanPipelineReportResponse,
            reporting::LoanMilestoneReportResponse,
            reporting::MloPipelineReportResponse,
            reporting::DwLoanMilestoneReportResponse,
            reporting::LoanReportingMetadataResponse,
            rest::OAuthTokenRequest,
        );
    }
    for (name, schema) in generator.take_definitions(true) {
        out.entry(name).or_insert(schema);
    }
    for schema in out.values_mut() {
        crate::tidy(schema);
    }
    out
}
