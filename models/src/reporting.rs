//! The reporting response records: what the six reporting tools return. Plugins build their
//! results from these types and generate their `outputSchema` with [`output_schema`], so an
//! answer and its schema cannot drift apart.

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::Decimal;

/// A record's JSON Schema as a tool's `outputSchema`: every subschema inlined (no `$ref`, so
/// clients need no resolver), no `$schema` keyword (clients of older MCP revisions assume
/// draft-07 and refuse an unknown meta-schema), and only formats of the OpenAPI format
/// registry (`uint64` and friends become `minimum: 0`, which schemars writes beside them).
/// Descriptions are the types' doc comments.
pub fn output_schema<T: JsonSchema>() -> Value {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let mut schema = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    crate::tidy(&mut schema);
    schema
}

/// Declares a closed reporting record (camelCase fields, nothing else accepted on reading).
macro_rules! record {
    ($(#[$meta:meta])* pub struct $name:ident { $($body:tt)* }) => {
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        $(#[$meta])*
        pub struct $name { $($body)* }
    };
}

record! {
    /// `LoanAggregationResponse` (`report_loans`): loans counted and measured per bucket.
    pub struct LoanAggregationResponse {
        /// Echo of groupBy.
        pub group_by: String,
        /// Echo of metricField.
        pub metric: String,
        /// Echo of metric.
        pub function: String,
        /// Loans in all buckets, truncated ones included.
        pub total_count: u64,
        /// Buckets returned.
        pub bucket_count: u64,
        /// True when a high-cardinality grouping was capped.
        pub truncated: bool,
        /// The buckets: by count (highest first) for dimensions, by period for Month, Quarter
        /// and Year.
        pub buckets: Vec<LoanAggregationBucket>,
    }
}

/// `keyId` and `value` are written on every bucket, `null` included (schemars would drop the
/// `null` from a required `Option`, so they are added to `required` here).
fn bucket_fields_always_present(schema: &mut schemars::Schema) {
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        required.push("keyId".into());
        required.push("value".into());
    }
}

record! {
    /// One bucket of `report_loans`.
    #[schemars(transform = bucket_fields_always_present)]
    pub struct LoanAggregationBucket {
        /// Status name, month `YYYY-MM`, quarter `YYYY-Qn`, year `YYYY`, an officer name, or
        /// `all`.
        pub key: String,
        /// The user id, set only when grouping by LoanOfficer or ReferringAgent.
        pub key_id: Option<Uuid>,
        /// Loans in the bucket.
        pub count: u64,
        /// Sum of metricField over the loans that have a value; omitted when none has.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "Decimal")]
        pub sum: Option<Decimal>,
        /// Average (2 decimal places) over the loans that have a value; omitted when none has.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "Decimal")]
        pub average: Option<Decimal>,
        /// Smallest value; omitted when no loan has one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "Decimal")]
        pub min: Option<Decimal>,
        /// Largest value; omitted when no loan has one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "Decimal")]
        pub max: Option<Decimal>,
        /// The requested metric's value (the count for Count); null when no loan has a value.
        pub value: Option<Decimal>,
    }
}

record! {
    /// `LoanPipelineReportResponse` (`loan_pipeline_report`): where loans sit now, by macro
    /// stage, and a monthly trend.
    pub struct LoanPipelineReportResponse {
        /// Every macro stage in pipeline order, terminal stages last.
        pub current_pipeline_by_stage: Vec<PipelineStage>,
        /// Loans by the month their current status was set, oldest first.
        pub monthly_trend: Vec<MonthlyTrendPoint>,
        /// Loans in non-terminal stages.
        pub active_loan_count: u64,
        /// How to read the figures.
        pub note: String,
    }
}

record! {
    /// One macro stage of `loan_pipeline_report`.
    pub struct PipelineStage {
        pub stage: String,
        pub order: u32,
        pub is_terminal: bool,
        pub count: u64,
        /// USD.
        pub total_loan_amount: Decimal,
        /// The raw statuses rolled into the stage.
        pub statuses: Vec<String>,
    }
}

record! {
    /// One month of `loan_pipeline_report`'s trend.
    pub struct MonthlyTrendPoint {
        /// `YYYY-MM`.
        pub period: String,
        pub count: u64,
        /// USD.
        pub total_loan_amount: Decimal,
    }
}

record! {
    /// `LoanMilestoneReportResponse` (`report_loan_milestones`): distinct loans crossing each
    /// stage per period, from persisted LOS status history.
    pub struct LoanMilestoneReportResponse {
        /// Echo of granularity: Week or Month.
        pub granularity: String,
        /// Northstar (funnel stage) or Milestone (raw LOS milestone).
        pub group_by: String,
        pub truncated: bool,
        /// How to read the figures.
        pub note: String,
        /// By period, then stage order, then stage.
        pub buckets: Vec<MilestoneBucket>,
    }
}

record! {
    /// One period and stage of `report_loan_milestones`.
    pub struct MilestoneBucket {
        /// `YYYY-MM` or ISO week `YYYY-Wnn`.
        pub period: String,
        pub stage: String,
        pub stage_order: u32,
        pub loan_count: u64,
        /// USD.
        pub loan_amount: Decimal,
    }
}

record! {
    /// `MloPipelineReportResponse` (`mlo_pipeline_report`): recruiting cohorts by current
    /// candidate stage.
    pub struct MloPipelineReportResponse {
        /// Echo of bucket: Month or Week.
        pub bucket: String,
        pub row_count: u64,
        pub rows: Vec<MloPipelineRow>,
    }
}

record! {
    /// One cohort and stage of `mlo_pipeline_report`.
    pub struct MloPipelineRow {
        /// The deals' creation period: `YYYY-MM` or ISO week `YYYY-Wnn`.
        pub period: String,
        pub stage: String,
        pub display_order: u32,
        pub is_terminal: bool,
        /// Deals created in the period that are now at the stage.
        pub entry_count: u64,
    }
}

record! {
    /// `DwLoanMilestoneReportResponse` (`warehouse_loan_milestone_report`): loans reaching each
    /// warehouse milestone per period.
    pub struct DwLoanMilestoneReportResponse {
        /// Echo of bucket: Month or Week.
        pub bucket: String,
        /// Echo of fromDate (`YYYY-MM-DD`).
        pub from_date: String,
        /// Echo of toDate (`YYYY-MM-DD`).
        pub to_date: String,
        pub row_count: u64,
        pub rows: Vec<DwMilestoneRow>,
    }
}

record! {
    /// One period and milestone of `warehouse_loan_milestone_report`.
    pub struct DwMilestoneRow {
        pub period: String,
        pub milestone: String,
        /// The funnel stage the milestone maps to.
        pub stage: String,
        pub stage_order: u32,
        pub loan_count: u64,
    }
}

record! {
    /// `LoanReportingMetadataResponse` (`get_loan_reporting_metadata`): the vocabulary of the
    /// loan reporting tools.
    pub struct LoanReportingMetadataResponse {
        pub statuses: Vec<String>,
        pub loan_types: Vec<String>,
        pub purposes: Vec<String>,
        pub group_by_dimensions: Vec<String>,
        pub metric_functions: Vec<String>,
        pub metric_fields: Vec<String>,
        pub date_fields: Vec<String>,
        pub order_by_options: Vec<String>,
        pub northstar_stages: Vec<String>,
        pub milestone_granularities: Vec<String>,
    }
}
