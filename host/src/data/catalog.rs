//! The datasets plugins may ask for, and which are caller-scoped or org-wide.

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
}

impl Dataset {
    /// Every dataset.
    pub const ALL: [Dataset; 4] = [
        Dataset::Loans,
        Dataset::LosStatusHistory,
        Dataset::DwLoanMilestones,
        Dataset::DwDeals,
    ];

    /// The name plugins and manifests use.
    pub const fn as_str(self) -> &'static str {
        match self {
            Dataset::Loans => "loans",
            Dataset::LosStatusHistory => "los-status-history",
            Dataset::DwLoanMilestones => "dw-loan-milestones",
            Dataset::DwDeals => "dw-deals",
        }
    }

    /// Parses a dataset name.
    pub fn parse(s: &str) -> Option<Dataset> {
        Dataset::ALL.into_iter().find(|d| d.as_str() == s)
    }

    /// Warehouse datasets are org-wide: no caller scope applies.
    pub const fn is_org_wide(self) -> bool {
        matches!(self, Dataset::DwLoanMilestones | Dataset::DwDeals)
    }
}
