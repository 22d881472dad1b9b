//! The datasets plugins may ask for, which are caller-scoped or org-wide, and the fields each
//! one exposes (a whitelist mapping field names to fixed SQL column expressions).

/// A logical dataset of the spec's three stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dataset {
    /// The denormalized loan snapshot store (caller-scoped).
    Loans,
    /// Persisted LOS status history joined to the loan snapshot (caller-scoped).
    LosStatusHistory,
    /// Data Warehouse loan milestones (org-wide).
    DwLoanMilestones,
    /// Data Warehouse MLO recruiting deals (org-wide).
    DwDeals,
    /// The people on the loans of the caller's scope, and the caller (caller-scoped): read
    /// only by the `people` capability's search (`data::people`), never queried or listed.
    People,
    /// Users' state licences, behind the per-user access check: read only by the `licensing`
    /// capability (`data::licensing`).
    UserLicenses,
    /// The platform's rate sheet: read only by the `pricing` capability's quotes
    /// (`data::pricing`), for a caller licensed in the scenario's state.
    RateSheet,
    /// Loan applications joined to their loan (schema v21): only listed, never aggregated,
    /// within the per-loan tools' scope ([`crate::data::scope::Scope::resolve_per_loan`]);
    /// a borrower's sensitive data is in no field (the import refuses it, decision 0046).
    LoanApplications,
}

/// How a field's values are stored and returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldType {
    /// Text (names, statuses, ids).
    Text,
    /// UTC epoch milliseconds, returned as RFC 3339 timestamps.
    Instant,
    /// Decimal scaled by 10^4, returned as an exact decimal string.
    Decimal,
}

/// One field of a dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// The name plugins use.
    pub name: &'static str,
    /// The fixed SQL expression (over the dataset's table aliases).
    pub column: &'static str,
    /// The value type.
    pub ty: FieldType,
    /// Who may read it, and how ([`Exposure`]: the catalog's one table of personal data).
    pub exposure: Exposure,
    /// A cheaper expression with exactly the same equality (an integer key for a UUID), used
    /// where only equality matters: `DISTINCT` and `COUNT(DISTINCT …)`. `None`: the column.
    pub identity: Option<&'static str>,
    /// For a date-time field the row also stores as a month index (`year × 12 + month − 1`,
    /// UTC; migration 0007): that column. Month, quarter and year keys group by it and label
    /// the groups, and a covering index leads with it, holding `Dataset::MONTH_HELD`.
    pub month: Option<&'static str>,
}

pub use super::exposure::{Exposure, WITHHELD};

impl Field {
    /// Readable only by callers who may read names (Admin, Processor, ConciergeKey).
    pub fn restricted(&self) -> bool {
        self.exposure == Exposure::Name
    }

    /// Identifies one loan or deal: read only under a listing grant.
    pub fn identifying(&self) -> bool {
        self.exposure == Exposure::Identifying
    }

    /// A borrower's name: only listed.
    pub fn borrower(&self) -> bool {
        self.exposure == Exposure::Borrower
    }

    /// The expression to de-duplicate on: the identity when there is one, else the column.
    pub fn identity(&self) -> &'static str {
        self.identity.unwrap_or(self.column)
    }
}

pub(super) const fn f(name: &'static str, column: &'static str, ty: FieldType) -> Field {
    Field {
        name,
        column,
        ty,
        exposure: Exposure::Open,
        identity: None,
        month: None,
    }
}

/// A field that identifies one loan or deal ([`Exposure::Identifying`]).
pub(super) const fn id_field(name: &'static str, column: &'static str) -> Field {
    Field {
        exposure: Exposure::Identifying,
        ..f(name, column, FieldType::Text)
    }
}

pub(super) const fn name_field(name: &'static str, column: &'static str) -> Field {
    Field {
        name,
        column,
        ty: FieldType::Text,
        exposure: Exposure::Name,
        identity: None,
        month: None,
    }
}

/// A borrower's name ([`Exposure::Borrower`]).
pub(super) const fn borrower_field(name: &'static str, column: &'static str) -> Field {
    Field {
        exposure: Exposure::Borrower,
        ..f(name, column, FieldType::Text)
    }
}

/// A loan id held as an integer key (`key` over the row's alias): reads back as the UUID,
/// de-duplicates on the integer.
const fn loan_key_field(column: &'static str, key: &'static str) -> Field {
    Field {
        name: "loanId",
        column,
        ty: FieldType::Text,
        exposure: Exposure::Identifying,
        identity: Some(key),
        month: None,
    }
}

use super::application_fields::APPLICATION_FIELDS;
use super::capability_fields::{LICENSE_FIELDS, PEOPLE_FIELDS, RATE_FIELDS};
pub use super::catalog_tables::{HistorySets, WarehouseCounts};
use FieldType::{Decimal, Instant, Text};

/// The amounts the snapshot's covering indexes hold beside their key.
const COVERED_AMOUNTS: [&str; 3] = ["loanAmount", "lockedCompensation", "estimatedCompensation"];

/// Fields of the loan snapshot (alias `l`).
const LOAN_FIELDS: &[Field] = &[
    Field {
        identity: Some("l.key"),
        ..id_field("id", "l.id")
    },
    id_field("loanNumber", "l.loan_number"),
    f("status", "l.status", Text),
    Field {
        month: Some("l.status_month"),
        ..f("statusDate", "l.status_date", Instant)
    },
    f("loanType", "l.loan_type", Text),
    f("purpose", "l.purpose", Text),
    Field {
        month: Some("l.estimated_closing_month"),
        ..f("estimatedClosingDate", "l.estimated_closing_date", Instant)
    },
    Field {
        month: Some("l.updated_month"),
        ..f("updated", "l.updated", Instant)
    },
    f("loanAmount", "l.loan_amount", Decimal),
    f("lockedCompensation", "l.locked_compensation", Decimal),
    f("estimatedCompensation", "l.estimated_compensation", Decimal),
    f("propertyState", "l.property_state", Text),
    f("companyId", "l.company_id", Text),
    f("loanOfficerId", "l.loan_officer_id", Text),
    name_field("loanOfficerName", "l.loan_officer_name"),
    f("loanAssistantId", "l.loan_assistant_id", Text),
    f("processorId", "l.processor_id", Text),
    name_field("processorName", "l.processor_name"),
    f("referringAgentId", "l.referring_agent_id", Text),
    name_field("referringAgentName", "l.referring_agent_name"),
    borrower_field("borrowerFirstName", "l.borrower_first_name"),
    borrower_field("borrowerLastName", "l.borrower_last_name"),
];

/// Fields of a history row (alias `h`), besides the loan's own fields.
const HISTORY_FIELDS: &[Field] = &[
    loan_key_field(
        "(SELECT lk.id FROM loan_keys lk WHERE lk.key = h.loan_key)",
        "h.loan_key",
    ),
    f("milestone", "h.status", Text),
    f("occurredAt", "h.occurred_at", Instant),
];

const DW_MILESTONE_FIELDS: &[Field] = &[
    loan_key_field(
        "(SELECT lk.id FROM loan_keys lk WHERE lk.key = m.loan_key)",
        "m.loan_key",
    ),
    f("milestone", "m.milestone", Text),
    f("occurredAt", "m.occurred_at", Instant),
];

const DW_DEAL_FIELDS: &[Field] = &[
    id_field("id", "d.id"),
    f("createdAt", "d.created_at", Instant),
    f("stage", "d.stage", Text),
];

impl Dataset {
    /// Every dataset.
    pub const ALL: [Dataset; 8] = [
        Dataset::Loans,
        Dataset::LosStatusHistory,
        Dataset::DwLoanMilestones,
        Dataset::DwDeals,
        Dataset::People,
        Dataset::UserLicenses,
        Dataset::RateSheet,
        Dataset::LoanApplications,
    ];

    /// The name plugins and manifests use.
    pub const fn as_str(self) -> &'static str {
        match self {
            Dataset::Loans => "loans",
            Dataset::LosStatusHistory => "los-status-history",
            Dataset::DwLoanMilestones => "dw-loan-milestones",
            Dataset::DwDeals => "dw-deals",
            Dataset::People => "people",
            Dataset::UserLicenses => "user-licenses",
            Dataset::RateSheet => "rate-sheet",
            Dataset::LoanApplications => "loan-applications",
        }
    }

    /// Parses a dataset name.
    pub fn parse(s: &str) -> Option<Dataset> {
        Dataset::ALL.into_iter().find(|d| d.as_str() == s)
    }

    /// The capability that alone reads the dataset, for the datasets no query or list reads
    /// (their rows are the capability's, behind its own checks).
    pub const fn read_by(self) -> Option<&'static str> {
        match self {
            Dataset::People => Some("people.search"),
            Dataset::UserLicenses => Some("licensing.user-licenses"),
            Dataset::RateSheet => Some("pricing.quote"),
            _ => None,
        }
    }

    /// Whether the dataset is only listed (the listing capability), never queried.
    pub const fn only_listed(self) -> bool {
        matches!(self, Dataset::LoanApplications)
    }

    /// Warehouse datasets are org-wide: no caller scope applies.
    pub const fn is_org_wide(self) -> bool {
        matches!(self, Dataset::DwLoanMilestones | Dataset::DwDeals)
    }

    /// Whether the spec's `filter` object applies (snapshot-backed datasets).
    pub const fn has_loans(self) -> bool {
        matches!(
            self,
            Dataset::Loans | Dataset::LosStatusHistory | Dataset::LoanApplications
        )
    }

    /// The `FROM` clause. History rows join their loan by its integer key (only loans in the
    /// snapshot appear).
    pub const fn from_clause(self) -> &'static str {
        match self {
            Dataset::Loans => "loans l",
            Dataset::LosStatusHistory => "los_status_history h JOIN loans l ON l.key = h.loan_key",
            Dataset::DwLoanMilestones => "dw_loan_milestones m",
            Dataset::DwDeals => "dw_deals d",
            // Never compiled (`plan::compile` refuses them): their capabilities read them.
            Dataset::People => "people p",
            Dataset::UserLicenses => "user_licenses u",
            Dataset::RateSheet => "rate_sheet r",
            Dataset::LoanApplications => "loan_applications a JOIN loans l ON l.key = a.loan_key",
        }
    }

    /// History on its own, for a query that reads nothing of the loan but what history rows
    /// carry (its amount) and has no loan scope or filter to apply: the same rows as
    /// [`Dataset::from_clause`] (`in_snapshot` stands for the join), no loan row read.
    pub const HISTORY_ONLY_FROM: &'static str = "los_status_history h";
    /// The condition that keeps [`Dataset::HISTORY_ONLY_FROM`] to the joined rows.
    pub const HISTORY_ONLY_WHERE: &'static str = "h.in_snapshot = 1";
    /// Whole-snapshot group-bys the snapshot's covering indexes serve in key order (SQLite
    /// then aggregates while it reads, without sorting a million rows): (the index's leading
    /// key fields, of which the group-by keys must be a prefix, in order; the fields the same
    /// index holds besides). Migration 0003 creates the first three, 0006 the officer's and the
    /// referrer's (id, then name: an Admin groups by both, an Agent by the id alone).
    pub const COVERED_GROUPS: &'static [(&'static [&'static str], &'static [&'static str])] = &[
        (&["status"], &COVERED_AMOUNTS),
        (&["loanType"], &COVERED_AMOUNTS),
        (&["purpose"], &COVERED_AMOUNTS),
        (&["loanOfficerId", "loanOfficerName"], &COVERED_AMOUNTS),
        (
            &["referringAgentId", "referringAgentName"],
            &COVERED_AMOUNTS,
        ),
    ];

    /// Whether no two rows of the dataset share a value of the field (its primary key): a
    /// distinct count of it is a count of its non-null values, with nothing to de-duplicate.
    pub fn is_unique(self, field: &str) -> bool {
        matches!(
            (self, field),
            (Dataset::Loans, "id") | (Dataset::DwDeals, "id")
        )
    }

    /// What the covering index that leads with each stored month index (`Field::month`,
    /// migration 0007: one per such field) holds besides: a whole-snapshot month, quarter or
    /// year group-by reading only these reads that index in key order, over a range of whole
    /// months when the predicates bound the field at month starts.
    pub const MONTH_HELD: &'static [&'static str] = &COVERED_AMOUNTS;

    /// The counts the import keeps of a warehouse dataset, per whole month or week and key
    /// (the milestones' distinct loans, schema v8; the deals per stage, schema v10), and the
    /// rows a window's partial periods are read from: what the planner reads and the import
    /// writes. `None` for the other datasets.
    pub fn warehouse_counts(self) -> Option<WarehouseCounts> {
        match self {
            Dataset::DwLoanMilestones => Some(WarehouseCounts {
                instant: "occurredAt",
                key: "milestone",
                counted: "loanId",
                months: "dw_milestone_counts_months",
                weeks: "dw_milestone_counts_weeks",
                count: "loans",
                rows: "dw_loan_milestones",
                row_instant: "occurred_at",
                row_key: "milestone",
                row_counted: "loan_key",
            }),
            Dataset::DwDeals => Some(WarehouseCounts {
                instant: "createdAt",
                key: "stage",
                counted: "id",
                months: "dw_deal_counts_months",
                weeks: "dw_deal_counts_weeks",
                count: "deals",
                rows: "dw_deals",
                row_instant: "created_at",
                row_key: "stage",
                row_counted: "id",
            }),
            Dataset::Loans
            | Dataset::LosStatusHistory
            | Dataset::People
            | Dataset::UserLicenses
            | Dataset::RateSheet
            | Dataset::LoanApplications => None,
        }
    }

    /// The datasets with [`Dataset::warehouse_counts`].
    pub const WAREHOUSE_COUNTED: [Dataset; 2] = [Dataset::DwLoanMilestones, Dataset::DwDeals];

    /// The period sets that answer counts of distinct loans per (whole month or week, set of
    /// statuses) organisation-wide (schema v4, `history_keys.rs`; the compiler's period sets
    /// in `query.rs`).
    pub const HISTORY_SETS: HistorySets = HistorySets {
        instant: "occurredAt",
        status: "milestone",
        loan: "loanId",
        months: "los_history_months r",
        weeks: "los_history_weeks r",
        carried: &[("loan.loanAmount", "r.loan_amount")],
        counted_months: "los_set_counts_months r",
        counted_weeks: "los_set_counts_weeks r",
        status_counted_months: "los_status_counts_months r",
        status_counted_weeks: "los_status_counts_weeks r",
        counted: &[(
            "loan.loanAmount",
            ["r.amounts", "r.amount_sum", "r.amount_min", "r.amount_max"],
        )],
        rows: "los_status_history h",
        row_status: "h.status",
        row_bit: "h.status_bit",
        row_month: "h.month_index",
        row_week: "h.week_index",
        person_loans: "person_loans p",
        person_months: "p.months",
        person_weeks: "p.weeks",
        person_carried: &[("loan.loanAmount", "p.loan_amount")],
    };

    /// What history rows carry of their loan: (field, column).
    pub const HISTORY_CARRIED: &'static [(&'static str, &'static str)] =
        &[("loan.loanAmount", "h.loan_amount")];

    /// Looks up a field. History rows also expose the loan's fields as `loan.<field>`.
    pub fn field(self, name: &str) -> Option<Field> {
        let find = |fields: &[Field], n: &str| fields.iter().find(|f| f.name == n).copied();
        match self {
            Dataset::Loans => find(LOAN_FIELDS, name),
            Dataset::LosStatusHistory => find(HISTORY_FIELDS, name).or_else(|| {
                name.strip_prefix("loan.")
                    .and_then(|n| find(LOAN_FIELDS, n))
            }),
            Dataset::DwLoanMilestones => find(DW_MILESTONE_FIELDS, name),
            Dataset::DwDeals => find(DW_DEAL_FIELDS, name),
            Dataset::People => find(PEOPLE_FIELDS, name),
            Dataset::UserLicenses => find(LICENSE_FIELDS, name),
            Dataset::RateSheet => find(RATE_FIELDS, name),
            Dataset::LoanApplications => find(APPLICATION_FIELDS, name),
        }
    }

    /// The field names, for error messages.
    pub fn field_names(self) -> Vec<String> {
        let names = |fields: &[Field]| {
            fields
                .iter()
                .map(|f| f.name.to_string())
                .collect::<Vec<_>>()
        };
        match self {
            Dataset::Loans => names(LOAN_FIELDS),
            Dataset::LosStatusHistory => {
                let mut v = names(HISTORY_FIELDS);
                v.extend(LOAN_FIELDS.iter().map(|f| format!("loan.{}", f.name)));
                v
            }
            Dataset::DwLoanMilestones => names(DW_MILESTONE_FIELDS),
            Dataset::DwDeals => names(DW_DEAL_FIELDS),
            Dataset::People => names(PEOPLE_FIELDS),
            Dataset::UserLicenses => names(LICENSE_FIELDS),
            Dataset::RateSheet => names(RATE_FIELDS),
            Dataset::LoanApplications => names(APPLICATION_FIELDS),
        }
    }
}
