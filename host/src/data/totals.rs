//! The snapshot's totals (schema v11, migration 0012; per company, schema v12, migration
//! 0013; an assistant's and a processor's, schema v18): per value of one group key of the
//! loans — a status, a loan type, a purpose, an officer, an assistant, a processor or a
//! referrer with the name the loans give them, the month index of a stored date —
//! how many loans hold it, and each totalled amount's count, sum, minimum and maximum, over the
//! whole snapshot and per company. What the planner reads (`plan_totals`) and the import counts
//! again (`import::totals`) are both described here.

/// One table of totals. Its key columns are named as the loans' columns they count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Totals {
    /// The table over the whole snapshot.
    pub table: &'static str,
    /// The table per company: the same key after `company_id`, the same partials.
    pub by_company: &'static str,
    /// The key: (loan field, column), the first the one the import counts again by.
    pub keys: &'static [(&'static str, &'static str)],
    /// For the month index of a date-time field (`Field::month`): that field; its months,
    /// quarters and years group by the key.
    pub date: Option<&'static str>,
}

impl Totals {
    /// The column holding `field`, when the key holds it.
    pub fn column(&self, field: &str) -> Option<&'static str> {
        self.keys.iter().find(|(f, _)| *f == field).map(|(_, c)| *c)
    }

    /// The column the import counts again by (the first of the key).
    pub fn first(&self) -> &'static str {
        self.keys[0].1
    }

    /// Whether the key is a month index (an integer) rather than text.
    pub fn is_month(&self) -> bool {
        self.date.is_some()
    }
}

const fn text(
    table: &'static str,
    by_company: &'static str,
    keys: &'static [(&'static str, &'static str)],
) -> Totals {
    Totals {
        table,
        by_company,
        keys,
        date: None,
    }
}

/// Every table of totals (migrations 0012, 0013 and 0018).
pub const TOTALS: [Totals; 10] = [
    text(
        "loan_totals_status",
        "loan_company_totals_status",
        &[("status", "status")],
    ),
    text(
        "loan_totals_type",
        "loan_company_totals_type",
        &[("loanType", "loan_type")],
    ),
    text(
        "loan_totals_purpose",
        "loan_company_totals_purpose",
        &[("purpose", "purpose")],
    ),
    text(
        "loan_totals_officer",
        "loan_company_totals_officer",
        &[
            ("loanOfficerId", "loan_officer_id"),
            ("loanOfficerName", "loan_officer_name"),
        ],
    ),
    text(
        "loan_totals_referrer",
        "loan_company_totals_referrer",
        &[
            ("referringAgentId", "referring_agent_id"),
            ("referringAgentName", "referring_agent_name"),
        ],
    ),
    text(
        "loan_totals_assistant",
        "loan_company_totals_assistant",
        &[("loanAssistantId", "loan_assistant_id")],
    ),
    text(
        "loan_totals_processor",
        "loan_company_totals_processor",
        &[
            ("processorId", "processor_id"),
            ("processorName", "processor_name"),
        ],
    ),
    Totals {
        table: "loan_totals_status_months",
        by_company: "loan_company_totals_status_months",
        keys: &[("statusDate", "status_month")],
        date: Some("statusDate"),
    },
    Totals {
        table: "loan_totals_closing_months",
        by_company: "loan_company_totals_closing_months",
        keys: &[("estimatedClosingDate", "estimated_closing_month")],
        date: Some("estimatedClosingDate"),
    },
    Totals {
        table: "loan_totals_updated_months",
        by_company: "loan_company_totals_updated_months",
        keys: &[("updated", "updated_month")],
        date: Some("updated"),
    },
];

/// The amounts totalled: (loan field, column). Each has the columns `<column>_count`,
/// `_sum`, `_min` and `_max` in every table.
pub const TOTALLED: [(&str, &str); 3] = [
    ("loanAmount", "loan_amount"),
    ("lockedCompensation", "locked_compensation"),
    ("estimatedCompensation", "estimated_compensation"),
];

/// The column of `amount`'s partial aggregate `part` (`count`, `sum`, `min`, `max`), when
/// `amount` is totalled.
pub fn amount_column(amount: &str, part: &str) -> Option<String> {
    TOTALLED
        .iter()
        .find(|(f, _)| *f == amount)
        .map(|(_, c)| format!("{c}_{part}"))
}

/// The aggregates a table of totals holds per key, as counted from the loans, in the
/// tables' column order after the key: `loans`, then each amount's count, sum, min and max.
pub fn counted_columns() -> (Vec<String>, Vec<String>) {
    let (columns, aggregates, _) = partials();
    (columns, aggregates)
}

/// The same aggregates merged from rows of totals (the snapshot's from the companies'): counts
/// and sums summed, minimums and maximums taken again, in [`counted_columns`]' order.
pub fn merged_columns() -> Vec<String> {
    partials().2
}

/// Each partial's column, its aggregate over the loans, and its merge over rows of totals.
fn partials() -> (Vec<String>, Vec<String>, Vec<String>) {
    let mut columns = vec!["loans".to_string()];
    let mut aggregates = vec!["COUNT(*)".to_string()];
    let mut merged = vec!["SUM(loans)".to_string()];
    for (_, c) in TOTALLED {
        for (part, func, merge) in [
            ("count", "COUNT", "SUM"),
            ("sum", "SUM", "SUM"),
            ("min", "MIN", "MIN"),
            ("max", "MAX", "MAX"),
        ] {
            columns.push(format!("{c}_{part}"));
            aggregates.push(format!("{func}({c})"));
            merged.push(format!("{merge}({c}_{part})"));
        }
    }
    (columns, aggregates, merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::catalog::{Dataset, FieldType};

    #[test]
    fn every_key_and_amount_is_a_loan_column_of_the_same_name() {
        for t in TOTALS {
            assert_eq!(
                t.by_company,
                t.table.replace("loan_totals_", "loan_company_totals_")
            );
            for (field, column) in t.keys {
                let f = Dataset::Loans.field(field).expect("a loan field");
                let want = match t.date {
                    Some(date) => {
                        assert_eq!(*field, date, "{}", t.table);
                        f.month
                    }
                    None => Some(f.column),
                };
                assert_eq!(want.unwrap(), format!("l.{column}"), "{}", t.table);
            }
        }
        for (field, column) in TOTALLED {
            let f = Dataset::Loans.field(field).expect("a loan field");
            assert_eq!(f.ty, FieldType::Decimal);
            assert_eq!(f.column, format!("l.{column}"));
        }
        let (columns, aggregates) = counted_columns();
        assert_eq!(columns.len(), 13);
        assert_eq!(aggregates[5], "COUNT(locked_compensation)");
        let merged = merged_columns();
        assert_eq!(merged.len(), 13);
        assert_eq!(merged[0], "SUM(loans)");
        assert_eq!(merged[5], "SUM(locked_compensation_count)");
        assert_eq!(merged[12], "MAX(estimated_compensation_max)");
        assert_eq!(
            amount_column("estimatedCompensation", "max").unwrap(),
            "estimated_compensation_max"
        );
        assert_eq!(amount_column("status", "max"), None);
    }
}
