//! The section-completion report of a loan application (`LoanAppSectionCompletionReport`),
//! computed by the specification's rules from the sections' and the required borrower
//! document tasks' statuses, with the blockers worded as decision 0046 words them. Shared by
//! every build that answers a loan application (the host and the Rust SDK's plugins); issue #73
//! wires it to the application store.

use std::collections::BTreeMap;

use crate::loan_application::{
    LoanAppSectionCompletion, LoanAppSectionCompletionReport, SECTION_NAMES,
};

/// Section statuses that count as complete.
pub const COMPLETE_SECTION: [&str; 2] = ["Completed", "Accepted"];
/// Borrower document task statuses that do not block submission.
pub const DOCUMENT_IN: [&str; 3] = ["Uploaded", "Submitted", "Accepted"];
/// The status of a section the application holds no record of.
pub const SECTION_NOT_STARTED: &str = "NotStarted";

/// One wizard section as an application holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionState {
    /// One of [`SECTION_NAMES`].
    pub name: String,
    /// Its status (`Completed`, `Accepted`, `InProgress`, `NotStarted`, …).
    pub status: String,
    /// The code of the verification task that tracks it.
    pub task_code: Option<String>,
    /// The required fields still without a value.
    pub missing_fields: Vec<String>,
}

/// A required borrower document task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentTask {
    /// Its title, as the borrower sees it.
    pub title: String,
    /// Its status (`Requested`, `Uploaded`, `Submitted`, `Accepted`, `Rejected`, …).
    pub status: String,
}

/// The report for an application whose sections are `sections` (any order; a section of the
/// seven it has no record of is `NotStarted`; a name outside the seven is ignored), which is
/// already `submitted` or not, and whose required borrower document tasks are `documents`.
/// Each section entry carries `status` and `missingFields` beside the two fields the
/// specification shows.
pub fn section_completion(
    sections: &[SectionState],
    submitted: bool,
    documents: &[DocumentTask],
) -> LoanAppSectionCompletionReport {
    let ordered: Vec<SectionState> = SECTION_NAMES
        .iter()
        .map(|name| {
            sections
                .iter()
                .find(|s| s.name == *name)
                .cloned()
                .unwrap_or_else(|| SectionState {
                    name: name.to_string(),
                    status: SECTION_NOT_STARTED.into(),
                    task_code: None,
                    missing_fields: vec![],
                })
        })
        .collect();
    let incomplete: Vec<String> = ordered
        .iter()
        .filter(|s| !COMPLETE_SECTION.contains(&s.status.as_str()))
        .map(|s| format!("Section '{}' is {}", s.name, s.status))
        .collect();
    let mut missing: Vec<&DocumentTask> = documents
        .iter()
        .filter(|d| !DOCUMENT_IN.contains(&d.status.as_str()))
        .collect();
    missing.sort_by(|a, b| a.title.cmp(&b.title));
    let mut blockers = Vec::new();
    if submitted {
        blockers.push("Already submitted".to_string());
    }
    let all_sections_complete = incomplete.is_empty();
    blockers.extend(incomplete);
    blockers.extend(
        missing
            .iter()
            .map(|d| format!("Required document '{}' is {}", d.title, d.status)),
    );
    LoanAppSectionCompletionReport {
        sections: Some(
            ordered
                .into_iter()
                .map(|s| LoanAppSectionCompletion {
                    section_name: Some(s.name),
                    task_code: s.task_code,
                    status: Some(s.status),
                    missing_fields: Some(s.missing_fields),
                    other: BTreeMap::new(),
                })
                .collect(),
        ),
        all_sections_complete,
        is_ready_to_submit: blockers.is_empty(),
        submit_blockers: Some(blockers),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECTION_STATUSES: [&str; 3] = ["Completed", "Accepted", "InProgress"];
    const DOCUMENT_STATUSES: [&str; 5] =
        ["Uploaded", "Submitted", "Accepted", "Requested", "Rejected"];

    fn section(name: &str, status: &str) -> SectionState {
        SectionState {
            name: name.into(),
            status: status.into(),
            task_code: Some(format!("VERIFY_{}", name.len())),
            missing_fields: vec![],
        }
    }

    /// Every document list of up to two tasks over [`DOCUMENT_STATUSES`].
    fn document_lists() -> Vec<Vec<DocumentTask>> {
        let doc = |title: &str, status: &str| DocumentTask {
            title: title.into(),
            status: status.into(),
        };
        let mut lists = vec![vec![]];
        for a in DOCUMENT_STATUSES {
            lists.push(vec![doc("W-2", a)]);
            for b in DOCUMENT_STATUSES {
                lists.push(vec![doc("Pay stub", a), doc("Bank statement", b)]);
            }
        }
        lists
    }

    #[test]
    fn every_combination_follows_the_specifications_rules() {
        // Arrange: every status of each of the seven sections, submitted or not, each list of
        // required documents.
        let lists = document_lists();
        let mut cases = 0;
        for code in 0..SECTION_STATUSES.len().pow(7) {
            let statuses: Vec<&str> = (0..7)
                .map(|i| SECTION_STATUSES[code / SECTION_STATUSES.len().pow(i as u32) % 3])
                .collect();
            // Stored in reverse: the report puts them in sidebar order.
            let sections: Vec<SectionState> = SECTION_NAMES
                .iter()
                .zip(&statuses)
                .rev()
                .map(|(n, s)| section(n, s))
                .collect();
            for submitted in [false, true] {
                for documents in &lists {
                    // Act
                    let r = section_completion(&sections, submitted, documents);
                    // Assert: the specification's rules, written out again.
                    let all = statuses
                        .iter()
                        .all(|s| *s == "Completed" || *s == "Accepted");
                    let docs = documents.iter().all(|d| {
                        ["Uploaded", "Submitted", "Accepted"].contains(&d.status.as_str())
                    });
                    assert_eq!(r.all_sections_complete, all);
                    assert_eq!(r.is_ready_to_submit, !submitted && all && docs);
                    let blockers = r.submit_blockers.as_ref().unwrap();
                    assert_eq!(blockers.is_empty(), r.is_ready_to_submit);
                    let expected = usize::from(submitted)
                        + statuses.iter().filter(|s| **s == "InProgress").count()
                        + documents
                            .iter()
                            .filter(|d| ["Requested", "Rejected"].contains(&d.status.as_str()))
                            .count();
                    assert_eq!(
                        blockers.len(),
                        expected,
                        "{statuses:?} {submitted} {documents:?}"
                    );
                    let names: Vec<&str> = r
                        .sections
                        .as_ref()
                        .unwrap()
                        .iter()
                        .map(|s| s.section_name.as_deref().unwrap())
                        .collect();
                    assert_eq!(names, SECTION_NAMES);
                    cases += 1;
                }
            }
        }
        assert_eq!(cases, 2187 * 2 * 31);
    }

    #[test]
    fn blockers_are_worded_in_order_and_absent_sections_are_not_started() {
        // Arrange: a submitted file, two sections on record, one document missing.
        let sections = [
            section("Assets", "InProgress"),
            section("About You", "Accepted"),
        ];
        let documents = [
            DocumentTask {
                title: "W-2".into(),
                status: "Requested".into(),
            },
            DocumentTask {
                title: "Bank statement".into(),
                status: "Uploaded".into(),
            },
        ];
        // Act
        let r = section_completion(&sections, true, &documents);
        // Assert
        assert_eq!(
            r.submit_blockers.unwrap(),
            [
                "Already submitted",
                "Section 'Loan & Property' is NotStarted",
                "Section 'Work & Income' is NotStarted",
                "Section 'Assets' is InProgress",
                "Section 'Liabilities' is NotStarted",
                "Section 'Real Estate' is NotStarted",
                "Section 'Additional Details' is NotStarted",
                "Required document 'W-2' is Requested",
            ]
        );
        let first = &r.sections.as_ref().unwrap()[0];
        assert_eq!(first.status.as_deref(), Some("Accepted"));
        assert_eq!(first.missing_fields, Some(vec![]));
        assert!(!r.all_sections_complete && !r.is_ready_to_submit);
    }

    #[test]
    fn a_complete_file_not_yet_submitted_is_ready_with_no_blockers() {
        let sections: Vec<SectionState> = SECTION_NAMES
            .iter()
            .map(|n| section(n, "Completed"))
            .collect();
        let r = section_completion(&sections, false, &[]);
        assert!(r.all_sections_complete && r.is_ready_to_submit);
        assert_eq!(r.submit_blockers, Some(vec![]));
    }
}
