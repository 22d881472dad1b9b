//! The seed's loans over time: the states, the LOS status paths loans walk, the warehouse
//! milestones and recruiting stages they map to, and the weights that make a realistic
//! pipeline.

use rand::rngs::StdRng;
use rand::Rng;

use crate::data::values::LOAN_STATUSES;

pub(super) const STATES: [&str; 10] = ["CA", "TX", "FL", "NY", "WA", "AZ", "CO", "GA", "NC", "IL"];

/// The path a loan walks through the LOS; a loan's history is a prefix of one of these.
pub(super) const MAIN_PATH: [&str; 16] = [
    "App Started",
    "Loan Open",
    "Loan Preapproval",
    "Rate Locked",
    "Loan Submitted",
    "Loan Processing",
    "Loan Underwriting",
    "Loan Condition Review",
    "Loan Approved",
    "Loan Clear To Close",
    "Loan Docs Ordered",
    "Loan Docs",
    "Loan Closed",
    "Loan Funded",
    "Loan Investor Conditions",
    "Loan Sold",
];

/// Warehouse milestone of a raw LOS status (docs/design.md §7.4 names).
pub(super) fn warehouse_milestone(status: &str) -> Option<&'static str> {
    Some(match status {
        "Loan Open" => "Opened",
        "Loan Submitted" => "Submitted",
        "Loan Underwriting" => "Underwriting",
        "Loan Approved" => "Approved",
        "Loan Clear To Close" => "Clear to Close",
        "Loan Docs" => "Docs",
        "Loan Funded" | "Loan Closed" => "Funded/Closed",
        "Loan Canceled" => "Canceled",
        "Loan Denied" => "Denied",
        "Loan Withdrawn" => "Withdrawn",
        _ => return None,
    })
}

pub(super) const MLO_STAGES: [&str; 21] = [
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

/// Cents as an exact JSON decimal.
pub(super) fn cents(c: u64) -> serde_json::Value {
    let text = if c.is_multiple_of(100) {
        (c / 100).to_string()
    } else {
        format!("{}.{:02}", c / 100, c % 100)
    };
    serde_json::from_str(&text).expect("a decimal literal")
}

/// A status index, weighted toward the active pipeline and post-closing states.
pub(super) fn weighted_status(rng: &mut StdRng) -> usize {
    // Common statuses get extra weight; every status keeps some.
    const HEAVY: [&str; 10] = [
        "Loan Open",
        "Loan Preapproval",
        "Loan Processing",
        "Loan Underwriting",
        "Loan Approved",
        "Loan Clear To Close",
        "Loan Funded",
        "Loan Sold",
        "Loan Purchased",
        "Loan Withdrawn",
    ];
    if rng.gen_bool(0.55) {
        let s = HEAVY[rng.gen_range(0..HEAVY.len())];
        LOAN_STATUSES
            .iter()
            .position(|x| *x == s)
            .expect("a known status")
    } else {
        rng.gen_range(0..LOAN_STATUSES.len())
    }
}

/// The raw LOS statuses a loan at `status` has passed through, ending with `status`.
pub(super) fn history_path(status: &str, rng: &mut StdRng) -> Vec<&'static str> {
    let current = LOAN_STATUSES
        .iter()
        .find(|s| **s == status)
        .copied()
        .expect("a known status");
    if let Some(pos) = MAIN_PATH.iter().position(|s| *s == status) {
        return MAIN_PATH[..=pos].to_vec();
    }
    // Post-closing states come after closing and funding; inactive ones after some progress.
    let cut = match status {
        "Loan Purchased"
        | "Loan Archived"
        | "Loan Sold"
        | "Loan Recorded"
        | "Loan Ready For Sale"
        | "Loan Clear To Purchase" => MAIN_PATH.len() - 2,
        s if s.contains("Purchase") || s.contains("Investor") => MAIN_PATH.len() - 2,
        "Loan Canceled" | "Loan Denied" | "Loan Withdrawn" | "Loan Suspended" | "Loan On Hold" => {
            rng.gen_range(1..8)
        }
        _ => rng.gen_range(0..6),
    };
    let mut path = MAIN_PATH[..cut.min(MAIN_PATH.len())].to_vec();
    path.push(current);
    path
}
