//! The snapshot's totals (schema v11, migration 0012): per value of one group key of the
//! loans — a status, a loan type, a purpose, an officer or a referrer with the name the loans
//! give them, the month index of a stored date — how many loans hold it, and each totalled
//! amount's count, sum, minimum and maximum. What the planner reads (`plan_totals`) and the
//! import counts again (`import::totals`) are both described here.

/// One table of totals. Its key columns are named as the loans' columns they count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Totals {
    /// The table.
    pub table: &'static str,
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

const fn text(table: &'static str, keys: &'static [(&'static str, &'static str)]) -> Totals {
    Totals {
        table,
        keys,
        date: None,
    }
}

/// Every table of totals (migration 0012).
pub const TOTALS: [Totals; 8] = [
    text("loan_totals_status", &[("status", "status")]),
    text("loan_totals_type", &[("loanType", "loan_type")]),
    text("loan_totals_purpose", &[("purpose", "purpose")]),
    text(
        "loan_totals_officer",
        &[
            ("loanOfficerId", "loan_officer_id"),
            ("loanOfficerName", "loan_officer_name"),
        ],
    ),
    text(
        "loan_totals_referrer",
        &[
            ("referringAgentId", "referring_agent_id"),
            ("referringAgentName", "referring_agent_name"),
        ],
    ),
    Totals {
        table: "loan_totals_status_months",
        keys: &[("statusDate", "status_month")],
        date: Some("statusDate"),
    },
    Totals {
        table: "loan_totals_closing_months",
        keys: &[("estimatedClosingDate", "estimated_closing_month")],
        date: Some("estimatedClosingDate"),
    },
    Totals {
        table: "loan_totals_updated_months",
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
    let mut columns = vec!["loans".to_string()];
    let mut aggregates = vec!["COUNT(*)".to_string()];
    for (_, c) in TOTALLED {
        for (part, func) in [
            ("count", "COUNT"),
            ("sum", "SUM"),
            ("min", "MIN"),
            ("max", "MAX"),
        ] {
            columns.push(format!("{c}_{part}"));
            aggregates.push(format!("{func}({c})"));
        }
    }
    (columns, aggregates)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::catalog::{Dataset, FieldType};

    #[test]
    fn every_key_and_amount_is_a_loan_column_of_the_same_name() {
        for t in TOTALS {
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
        assert_eq!(
            amount_column("estimatedCompensation", "max").unwrap(),
            "estimated_compensation_max"
        );
        assert_eq!(amount_column("status", "max"), None);
    }
}
