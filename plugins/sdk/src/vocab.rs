//! The platform's fixed vocabulary: the one source for the plugins (their schemas' `enum`s and
//! the metadata tool) and for the host (which includes this file to check filters and imports).
//! Plain `std` only, so it builds for the host and for wasm guests alike.

/// The 45 loan statuses, in the spec's order.
pub const LOAN_STATUSES: [&str; 45] = [
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

/// Loan types, in the metadata vocabulary's order.
pub const LOAN_TYPES: [&str; 5] = ["Conventional", "FHA", "VA", "USDA/Rural Housing", "Other"];

/// Loan purposes, in the metadata vocabulary's order.
pub const PURPOSES: [&str; 9] = [
    "Purchase",
    "Refinance",
    "Refinance Cashout",
    "Construction",
    "Construction Perm",
    "Other",
    "FHA Streamline Refi",
    "VA IRRRL",
    "Home Equity",
];

/// `report_loans`' groupBy dimensions, in the metadata vocabulary's order.
pub const GROUP_BY_DIMENSIONS: [&str; 9] = [
    "None",
    "Status",
    "LoanType",
    "Purpose",
    "LoanOfficer",
    "ReferringAgent",
    "Month",
    "Quarter",
    "Year",
];

/// `report_loans`' metric functions, in the metadata vocabulary's order.
pub const METRIC_FUNCTIONS: [&str; 5] = ["Count", "Sum", "Average", "Min", "Max"];

/// `report_loans`' money fields (`metricField`), in the metadata vocabulary's order.
pub const METRIC_FIELDS: [&str; 3] = ["LoanAmount", "LockedCompensation", "EstimatedCompensation"];

/// `report_loans`' date fields (`dateField`), in the metadata vocabulary's order.
pub const DATE_FIELDS: [&str; 3] = ["StatusDate", "ClosingDate", "Updated"];

/// Up to `n` of `accepted` closest to `value`, best first: a match ignoring case, then values
/// that contain it or that it contains (ignoring case), then by edit distance; ties keep the
/// vocabulary's order.
pub fn closest<'a>(value: &str, accepted: &[&'a str], n: usize) -> Vec<&'a str> {
    let wanted = value.trim().to_lowercase();
    let mut ranked: Vec<(usize, usize, usize, &'a str)> = accepted
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let lower = a.to_lowercase();
            let kind = if lower == wanted {
                0
            } else if !wanted.is_empty() && (lower.contains(&wanted) || wanted.contains(&lower)) {
                1
            } else {
                2
            };
            (kind, edit_distance(&lower, &wanted), i, *a)
        })
        .collect();
    ranked.sort();
    ranked.into_iter().take(n).map(|r| r.3).collect()
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_values_come_first() {
        assert_eq!(
            closest("Closed", &LOAN_STATUSES, 2),
            ["Loan Closed", "Loan Sold"]
        );
        assert_eq!(closest("loan open", &LOAN_STATUSES, 1), ["Loan Open"]);
        assert_eq!(
            closest("Refi", &PURPOSES, 3),
            ["Refinance", "Refinance Cashout", "FHA Streamline Refi"]
        );
        assert_eq!(closest("usda", &LOAN_TYPES, 1), ["USDA/Rural Housing"]);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
