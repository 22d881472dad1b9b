//! The field reference for plugin authors: every dataset's fields with their type, whether
//! reading them needs the name-reading right, and what they mean. Generated from the catalog
//! (`loanhost plugin fields`, and the table in `docs/plugins.md`), so it cannot drift from
//! what the `data` capability accepts: a catalog field without a meaning here fails a test.

use super::catalog::{Dataset, FieldType, WITHHELD};

/// One field as a plugin author needs to know it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldDoc {
    /// The dataset (`loans`, `los-status-history`, …).
    pub dataset: &'static str,
    /// The field name a query uses.
    pub field: String,
    /// `text`, `date-time` or `decimal`.
    #[serde(rename = "type")]
    pub ty: &'static str,
    /// Readable only by callers with Admin, Processor or ConciergeKey (`forbidden` otherwise).
    pub needs_name_right: bool,
    /// Who may read it: `aggregate` (any plugin granted it), `name` (only for callers with the
    /// name right), `identifying` (counted by any plugin granted it, read only with a listing
    /// grant), `borrower` (a borrower's name: only listed, under a listing grant, for callers
    /// who may read borrowers' names), `withheld` (held by the host, in no dataset: it never
    /// leaves the host).
    pub exposure: &'static str,
    /// The same, as the table of `docs/plugins.md` says it.
    #[serde(skip)]
    pub who_reads: &'static str,
    /// What it holds.
    pub meaning: String,
}

/// What each field of the loan snapshot holds (also readable from the history as `loan.<f>`).
const LOAN_MEANINGS: &[(&str, &str)] = &[
    ("id", "the loan's id (a UUID)"),
    ("loanNumber", "the loan number people see"),
    (
        "status",
        "the loan's current LOS status (`Loan Open`, `Loan Funded`, …)",
    ),
    ("statusDate", "when the loan entered its current status"),
    ("loanType", "Conventional, FHA, VA, USDA, …"),
    ("purpose", "Purchase, Refinance, …"),
    ("estimatedClosingDate", "the expected closing date"),
    ("updated", "when the loan last changed"),
    ("loanAmount", "the loan amount"),
    (
        "lockedCompensation",
        "the loan officer's compensation, locked",
    ),
    (
        "estimatedCompensation",
        "the loan officer's compensation, estimated",
    ),
    (
        "propertyState",
        "the property's state, a two-letter code (`CA`)",
    ),
    ("companyId", "the company the loan belongs to"),
    ("loanOfficerId", "the loan officer's platform user id"),
    ("loanOfficerName", "the loan officer's name"),
    ("borrowerFirstName", "the borrower's first name"),
    ("borrowerLastName", "the borrower's last name"),
    (
        "loanAssistantId",
        "the loan officer assistant's platform user id",
    ),
    ("processorId", "the processor's platform user id"),
    ("processorName", "the processor's name"),
    ("referringAgentId", "the referring agent's platform user id"),
    ("referringAgentName", "the referring agent's name"),
];

/// What the other datasets' own fields hold, by dataset.
const OTHER_MEANINGS: &[(Dataset, &str, &str)] = &[
    (
        Dataset::LoanApplications,
        "id",
        "the application's id (a UUID)",
    ),
    (
        Dataset::LoanApplications,
        "loanId",
        "its loan's id (a UUID)",
    ),
    (Dataset::LoanApplications, "loanNumber", "its loan's number"),
    (
        Dataset::LoanApplications,
        "status",
        "its readiness: InProgress, ReadyToSubmit or Submitted (the spec's rules, at import)",
    ),
    (Dataset::LoanApplications, "created", "when it was created"),
    (Dataset::LoanApplications, "updated", "when it last changed"),
    (
        Dataset::LoanApplications,
        "application",
        "its flags and instants (JSON: losType, isSubmitted, isLoanEditable, isSetupComplete, …)",
    ),
    (
        Dataset::LoanApplications,
        "updatedByName",
        "who last changed it (JSON: email, first and last name)",
    ),
    (
        Dataset::LoanApplications,
        "borrower",
        "the borrower and co-borrower (JSON) without SSN, birth date, demographics, \
         declarations, credit scores or account numbers, which are never stored",
    ),
    (
        Dataset::LoanApplications,
        "sections",
        "the seven wizard sections (JSON: name, status, task code, missing fields)",
    ),
    (
        Dataset::LoanApplications,
        "tasks",
        "its tasks (JSON, decision 0046)",
    ),
    (
        Dataset::LoanApplications,
        "documents",
        "its documents (JSON `Document`s)",
    ),
    (Dataset::LoanApplications, "timeline", "its events (JSON)"),
    (
        Dataset::LoanApplications,
        "contacts",
        "the people on the file (JSON `Contact`s, with names and phones)",
    ),
    (
        Dataset::LoanApplications,
        "contactRoles",
        "the same contacts' ids and roles only (JSON)",
    ),
    (
        Dataset::LoanApplications,
        "referredBy",
        "who referred it (a JSON `Contact`)",
    ),
    (Dataset::LoanApplications, "loanStatus", "its loan's status"),
    (
        Dataset::LoanApplications,
        "loanPurpose",
        "its loan's purpose",
    ),
    (Dataset::LoanApplications, "loanAmount", "its loan's amount"),
    (
        Dataset::LoanApplications,
        "propertyState",
        "its loan's property state",
    ),
    (
        Dataset::LoanApplications,
        "loanOfficerId",
        "its loan officer's user id",
    ),
    (
        Dataset::LoanApplications,
        "loanOfficerName",
        "its loan officer's name",
    ),
    (
        Dataset::LoanApplications,
        "borrowerFirstName",
        "its loan's borrower's first name",
    ),
    (
        Dataset::LoanApplications,
        "borrowerLastName",
        "its loan's borrower's last name",
    ),
    (
        Dataset::LosStatusHistory,
        "loanId",
        "the loan's id (a UUID)",
    ),
    (
        Dataset::LosStatusHistory,
        "milestone",
        "the LOS status the loan entered",
    ),
    (
        Dataset::LosStatusHistory,
        "occurredAt",
        "when it entered it",
    ),
    (
        Dataset::DwLoanMilestones,
        "loanId",
        "the loan's id (a UUID)",
    ),
    (
        Dataset::DwLoanMilestones,
        "milestone",
        "the warehouse milestone reached",
    ),
    (
        Dataset::DwLoanMilestones,
        "occurredAt",
        "when it was reached",
    ),
    (Dataset::DwDeals, "id", "the recruiting deal's id"),
    (Dataset::DwDeals, "createdAt", "when the deal was created"),
    (Dataset::DwDeals, "stage", "the deal's pipeline stage"),
    (
        Dataset::People,
        "id",
        "the person's platform user id (a UUID; what `loanOfficerIds` takes)",
    ),
    (
        Dataset::People,
        "isCaller",
        "`true` for the caller (a boolean, only searched, `people.search`)",
    ),
    (
        Dataset::People,
        "parts",
        "the parts they play on the scope's loans: officer, assistant, processor, referrer (a \
         list, only searched)",
    ),
    (
        Dataset::People,
        "name",
        "the directory's first and last name, else the name the loans give them",
    ),
    (
        Dataset::UserLicenses,
        "userId",
        "whose licence (read only behind the per-user check, `licensing.user-licenses`)",
    ),
    (
        Dataset::UserLicenses,
        "state",
        "the state's two-letter code",
    ),
    (
        Dataset::UserLicenses,
        "stateLicenseNumber",
        "the number the state issued",
    ),
    (
        Dataset::UserLicenses,
        "expirationYear",
        "the year it expires (`YYYY`)",
    ),
    (
        Dataset::RateSheet,
        "product",
        "a priced product (read only as quotes, `pricing.quote`)",
    ),
    (
        Dataset::RateSheet,
        "rate",
        "its indicative note rate, in percent",
    ),
    (
        Dataset::RateSheet,
        "points",
        "its points (negative: a credit)",
    ),
    (
        Dataset::RateSheet,
        "effectiveDate",
        "the rate sheet's effective date",
    ),
];

fn type_name(ty: FieldType) -> &'static str {
    match ty {
        FieldType::Text => "text",
        FieldType::Instant => "date-time",
        FieldType::Decimal => "decimal",
    }
}

/// What `field` of `dataset` holds, if the reference knows it.
fn meaning(dataset: Dataset, field: &str) -> Option<String> {
    if let Some((_, _, m)) = OTHER_MEANINGS
        .iter()
        .find(|(d, f, _)| *d == dataset && *f == field)
    {
        return Some(m.to_string());
    }
    let (own, prefix) = match field.strip_prefix("loan.") {
        Some(f) if dataset == Dataset::LosStatusHistory => (f, "the loan's: "),
        _ if dataset == Dataset::Loans => (field, ""),
        _ => return None,
    };
    LOAN_MEANINGS
        .iter()
        .find(|(f, _)| *f == own)
        .map(|(_, m)| format!("{prefix}{m}"))
}

/// Every field of every dataset, in the catalog's order, then the snapshot's columns the host
/// withholds.
pub fn reference() -> Vec<FieldDoc> {
    let mut fields: Vec<FieldDoc> = Dataset::ALL
        .into_iter()
        .flat_map(|dataset| {
            dataset.field_names().into_iter().map(move |name| {
                let field = dataset
                    .field(&name)
                    .expect("a listed field is in the catalog");
                FieldDoc {
                    dataset: dataset.as_str(),
                    meaning: meaning(dataset, &name).unwrap_or_default(),
                    field: name,
                    ty: type_name(field.ty),
                    needs_name_right: field.restricted(),
                    exposure: field.exposure.as_str(),
                    who_reads: field.exposure.who_reads(),
                }
            })
        })
        .collect();
    fields.extend(WITHHELD.iter().map(|(field, meaning)| FieldDoc {
        dataset: Dataset::Loans.as_str(),
        field: field.to_string(),
        ty: "text",
        needs_name_right: false,
        exposure: "withheld",
        who_reads: "withheld: in no dataset, it never leaves the host",
        meaning: meaning.to_string(),
    }));
    fields
}

/// The reference as the Markdown table of `docs/plugins.md`.
pub fn markdown() -> String {
    let mut out = String::from(
        "| dataset | field | type | who may read it | what it holds |\n|---|---|---|---|---|\n",
    );
    for f in reference() {
        out.push_str(&format!(
            "| `{}` | `{}` | {} | {} | {} |\n",
            f.dataset, f.field, f.ty, f.who_reads, f.meaning
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalog_field_has_a_meaning_and_the_guide_shows_the_reference() {
        let fields = reference();
        let missing: Vec<String> = fields
            .iter()
            .filter(|f| f.meaning.is_empty())
            .map(|f| format!("{}.{}", f.dataset, f.field))
            .collect();
        assert!(missing.is_empty(), "fields without a meaning: {missing:?}");
        assert!(fields
            .iter()
            .any(|f| f.field == "loan.loanOfficerName" && f.needs_name_right));
        assert!(fields
            .iter()
            .any(|f| f.field == "loanNumber" && f.exposure == "identifying"));
        assert!(fields
            .iter()
            .any(|f| f.field == "borrowerEmail" && f.exposure == "withheld"));
        let guide = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/plugins.md"),
        )
        .unwrap();
        assert!(
            guide.contains(&markdown()),
            "docs/plugins.md's field reference differs from the catalog: paste the output of \
             `loanhost plugin fields --markdown` between its markers"
        );
    }
}
