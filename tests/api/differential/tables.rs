//! The spec's tables as the differential oracle reads them: the tools, the 45 loan statuses,
//! the stages of each report, the funnel's and the warehouse's mappings, the roles' order.

pub(super) const TOOLS: [&str; 5] = [
    "report_loans",
    "loan_pipeline_report",
    "report_loan_milestones",
    "warehouse_loan_milestone_report",
    "mlo_pipeline_report",
];

/// The spec's 45 loan statuses, in its order (the raw-milestone `stageOrder`).
pub(super) const STATUSES: [&str; 45] = [
    "App Started",
    "Loan Officer Review",
    "Loan Open",
    "Loan Prequal",
    "Loan Preapproval",
    "Loan Submitted",
    "Loan Approved",
    "Loan Docs",
    "Loan Funded",
    "Loan On Hold",
    "Loan Suspended",
    "Loan Canceled",
    "Loan Denied",
    "Loan Closed",
    "Loan Underwriting",
    "Loan Other",
    "Loan Recorded",
    "Loan Clear To Close",
    "Loan Processing",
    "Loan Final Underwriting",
    "Loan Docs Back",
    "Loan Funding Conditions",
    "Loan Final Docs",
    "Loan Sold",
    "Loan Pre-Processing",
    "Loan Document Check",
    "Loan Document Check Failed",
    "Loan Pre-Underwriting",
    "Loan Condition Review",
    "Loan Pre-Doc QC",
    "Loan Docs Ordered",
    "Loan Docs Drawn",
    "Loan Investor Conditions",
    "Loan Investor Conditions Sent",
    "Loan Ready For Sale",
    "Loan Submitted For Purchase Review",
    "Loan In Purchase Review",
    "Loan Pre-Purchase Conditions",
    "Loan Submitted For Final Purchase Review",
    "Loan In Final Purchase Review",
    "Loan Clear To Purchase",
    "Loan Purchased",
    "Loan Counter Offer",
    "Loan Withdrawn",
    "Loan Archived",
];

/// docs/design.md §7.2: (order, stage, terminal, statuses).
pub(super) const MACRO: [(u32, &str, bool, &[&str]); 10] = [
    (
        1,
        "Lead",
        false,
        &[
            "App Started",
            "Loan Officer Review",
            "Loan Prequal",
            "Loan Other",
        ],
    ),
    (
        2,
        "Application",
        false,
        &["Loan Open", "Loan Preapproval", "Loan Counter Offer"],
    ),
    (
        3,
        "Processing",
        false,
        &[
            "Loan Submitted",
            "Loan Pre-Processing",
            "Loan Processing",
            "Loan Document Check",
            "Loan Document Check Failed",
            "Loan On Hold",
            "Loan Suspended",
        ],
    ),
    (
        4,
        "Underwriting",
        false,
        &[
            "Loan Pre-Underwriting",
            "Loan Underwriting",
            "Loan Condition Review",
            "Loan Final Underwriting",
        ],
    ),
    (5, "Approved", false, &["Loan Approved"]),
    (
        6,
        "Clear to Close",
        false,
        &["Loan Clear To Close", "Loan Pre-Doc QC"],
    ),
    (
        7,
        "Docs",
        false,
        &[
            "Loan Docs Ordered",
            "Loan Docs Drawn",
            "Loan Docs",
            "Loan Docs Back",
            "Loan Final Docs",
            "Loan Funding Conditions",
            "Loan Closed",
        ],
    ),
    (8, "Funded", false, &["Loan Funded", "Loan Recorded"]),
    (
        9,
        "Post-Closing",
        true,
        &[
            "Loan Investor Conditions",
            "Loan Investor Conditions Sent",
            "Loan Ready For Sale",
            "Loan Submitted For Purchase Review",
            "Loan In Purchase Review",
            "Loan Pre-Purchase Conditions",
            "Loan Submitted For Final Purchase Review",
            "Loan In Final Purchase Review",
            "Loan Clear To Purchase",
            "Loan Sold",
            "Loan Purchased",
            "Loan Archived",
        ],
    ),
    (
        10,
        "Inactive",
        true,
        &["Loan Canceled", "Loan Denied", "Loan Withdrawn"],
    ),
];

/// docs/design.md §7.3.
pub(super) const FUNNEL: [&str; 5] = [
    "1. Opened",
    "2. Pre-Approved",
    "3. Rate Locked",
    "4. Approved",
    "5. Closed & Funded",
];

pub(super) fn funnel_stage(raw: &str) -> &'static str {
    match raw {
        "Loan Open" => "1. Opened",
        "Loan Preapproval" => "2. Pre-Approved",
        "Rate Locked" => "3. Rate Locked",
        "Loan Approved" | "Loan Clear To Close" => "4. Approved",
        "Loan Closed" | "Loan Funded" => "5. Closed & Funded",
        _ => "Other",
    }
}

/// docs/design.md §7.4: milestones in order with their funnel stage.
pub(super) const WAREHOUSE: [(&str, &str); 10] = [
    ("Opened", "1. Opened"),
    ("Submitted", "Other"),
    ("Underwriting", "Other"),
    ("Approved", "4. Approved"),
    ("Clear to Close", "4. Approved"),
    ("Docs", "Other"),
    ("Funded/Closed", "5. Closed & Funded"),
    ("Canceled", "Other"),
    ("Denied", "Other"),
    ("Withdrawn", "Other"),
];

/// docs/design.md §7.5: candidate stages in display order (1-based).
pub(super) const MLO: [&str; 21] = [
    "1. Lead",
    "2. Contacted",
    "3. Interview Scheduled",
    "4. Interviewed",
    "5. Offer Extended",
    "6. Offer Accepted",
    "7. Pre-Licensing Course",
    "8. Exam Scheduled",
    "9. Exam Passed",
    "10. License Application Submitted",
    "11. Background Check",
    "12. License Approved",
    "13. NMLS Sponsorship",
    "14. Onboarding",
    "15. Systems Setup",
    "Fully Onboarded",
    "Closed Won",
    "Closed Lost",
    "License Not Approved",
    "Exam Failed",
    "App Cancelled",
];
pub(super) const MLO_TERMINAL: [&str; 4] = [
    "Fully Onboarded",
    "License Not Approved",
    "Exam Failed",
    "App Cancelled",
];

/// Role codes in the order the host lists a caller's roles.
pub(super) const ROLE_ORDER: [&str; 8] = [
    "Admin",
    "Processor",
    "ConciergeKey",
    "Agent",
    "DualLicensedAgent",
    "PreLicensed",
    "CompanyAdmin",
    "User",
];
