//! The parts of a loan application whose fields the specification does not show, as decision
//! 0046 decides them: a wizard section's state, a task (`LoanApplicationTaskItem`), a task
//! summary per kind (`TaskSummary`) and a timeline event (`LoanTimeline`). The host's import
//! validates `loan_applications.jsonl` with these types and every plugin that answers an
//! application reads them back with the same ones, so the stored form and the answered form
//! cannot drift apart.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::loan_application::{LoanAppSectionCompletionReport, SECTION_NAMES};
use crate::readiness::{section_completion, DocumentTask, SectionState, DOCUMENT_IN};
use crate::{Date, DateTime};

closed_model! {
    /// One of the seven borrower wizard sections as an application holds it.
    pub struct Section {
        /// One of the seven names, in the wizard's words (`About You`, …).
        pub section_name: String,
        /// Its status (`NotStarted`, `InProgress`, `Completed`, `Accepted`, …).
        pub status: String,
        /// The code of the verification task that tracks it.
        #[serde(default)]
        pub task_code: Option<String>,
        /// The required fields still without a value.
        #[serde(default)]
        pub missing_fields: Vec<String>,
    }
}

/// What a task asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum TaskKind {
    /// A document the borrower provides (pay stubs, bank statements): the kind whose required
    /// tasks decide `isReadyToSubmit`.
    BorrowerDocument,
    /// A verification the lender runs (employment, income, assets).
    Verification,
    /// A disclosure the borrower receives and signs.
    Disclosure,
    /// An underwriting condition.
    Condition,
    /// Anything else.
    Other,
}

impl TaskKind {
    /// Every kind, in the order summaries list them.
    pub const ALL: [TaskKind; 5] = [
        TaskKind::BorrowerDocument,
        TaskKind::Verification,
        TaskKind::Disclosure,
        TaskKind::Condition,
        TaskKind::Other,
    ];
}

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum TaskStatus {
    /// Not yet asked of anyone.
    Outstanding,
    /// Asked of the borrower (or the party that provides it), not provided.
    Requested,
    /// Provided by the borrower, not yet sent on.
    Uploaded,
    /// Sent on to the lender.
    Submitted,
    /// Reviewed and accepted.
    Accepted,
    /// Reviewed and refused: asked again.
    Rejected,
    /// No longer needed.
    Waived,
}

impl TaskStatus {
    /// Every status.
    pub const ALL: [TaskStatus; 7] = [
        TaskStatus::Outstanding,
        TaskStatus::Requested,
        TaskStatus::Uploaded,
        TaskStatus::Submitted,
        TaskStatus::Accepted,
        TaskStatus::Rejected,
        TaskStatus::Waived,
    ];

    /// The status as JSON writes it.
    pub const fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Outstanding => "Outstanding",
            TaskStatus::Requested => "Requested",
            TaskStatus::Uploaded => "Uploaded",
            TaskStatus::Submitted => "Submitted",
            TaskStatus::Accepted => "Accepted",
            TaskStatus::Rejected => "Rejected",
            TaskStatus::Waived => "Waived",
        }
    }

    /// Whether the task still waits on someone: `Outstanding`, `Requested` or `Rejected`. The
    /// others count as completed in a [`TaskSummary`](crate::loan_application::TaskSummary)
    /// (provided, sent on, accepted or waived).
    pub const fn is_outstanding(self) -> bool {
        matches!(
            self,
            TaskStatus::Outstanding | TaskStatus::Requested | TaskStatus::Rejected
        )
    }
}

closed_model! {
    /// `LoanApplicationTaskItem` as loanhost decides it (decision 0046).
    pub struct Task {
        /// The task's id.
        pub id: Uuid,
        /// The platform's code for the task (`PAYSTUBS`, `VERIFY_ASSETS`, …).
        #[serde(default)]
        pub code: Option<String>,
        /// What it asks for, as the borrower sees it.
        pub title: String,
        /// What kind of task.
        pub kind: TaskKind,
        /// Where it stands.
        pub status: TaskStatus,
        /// Whether the file needs it.
        pub is_required: bool,
        /// The borrower it is asked of (`null`: the file's).
        #[serde(default)]
        pub borrower_id: Option<Uuid>,
        /// When it is due.
        #[serde(default)]
        pub due_date: Option<Date>,
        /// When it was completed.
        #[serde(default)]
        pub completed_timestamp_utc: Option<DateTime>,
        /// The documents attached to it.
        #[serde(default)]
        pub document_ids: Vec<Uuid>,
    }
}

closed_model! {
    /// `TaskSummary` as loanhost decides it: the tasks of one kind, counted.
    pub struct TaskCount {
        /// The kind.
        pub kind: TaskKind,
        /// Its tasks.
        pub total: u32,
        /// Those still waiting on someone ([`TaskStatus::is_outstanding`]).
        pub outstanding: u32,
        /// The others.
        pub completed: u32,
    }
}

closed_model! {
    /// One event of `LoanTimeline`.
    pub struct TimelineEvent {
        /// What happened (`Started`, `SectionCompleted`, `DocumentUploaded`, `Submitted`, …).
        pub event: String,
        /// When.
        pub occurred_at: DateTime,
    }
}

/// The file's readiness as the import stores it, for `search_loan_applications`' `statuses`.
pub const READINESS: [&str; 3] = ["InProgress", "ReadyToSubmit", "Submitted"];

/// The section-completion report of an application with these sections and tasks, already
/// submitted or not: the specification's rules ([`section_completion`]) over its required
/// `BorrowerDocument` tasks.
pub fn report(
    sections: &[Section],
    tasks: &[Task],
    submitted: bool,
) -> LoanAppSectionCompletionReport {
    let states: Vec<SectionState> = sections
        .iter()
        .map(|s| SectionState {
            name: s.section_name.clone(),
            status: s.status.clone(),
            task_code: s.task_code.clone(),
            missing_fields: s.missing_fields.clone(),
        })
        .collect();
    let documents: Vec<DocumentTask> = tasks
        .iter()
        .filter(|t| t.is_required && t.kind == TaskKind::BorrowerDocument)
        .map(|t| DocumentTask {
            title: t.title.clone(),
            status: t.status.as_str().to_string(),
        })
        .collect();
    section_completion(&states, submitted, &documents)
}

/// The titles of the required `BorrowerDocument` tasks that block submission (not
/// `Uploaded`, `Submitted` or `Accepted`), in title order as [`report`]'s blockers name them.
pub fn blocking_documents(tasks: &[Task]) -> Vec<&str> {
    let mut titles: Vec<&str> = tasks
        .iter()
        .filter(|t| t.kind == TaskKind::BorrowerDocument && t.is_required)
        .filter(|t| !DOCUMENT_IN.contains(&t.status.as_str()))
        .map(|t| t.title.as_str())
        .collect();
    titles.sort_unstable();
    titles
}

/// One of [`READINESS`]: `Submitted` when submitted, `ReadyToSubmit` when the report says
/// so, else `InProgress`.
pub fn readiness(report: &LoanAppSectionCompletionReport, submitted: bool) -> &'static str {
    match (submitted, report.is_ready_to_submit) {
        (true, _) => "Submitted",
        (false, true) => "ReadyToSubmit",
        (false, false) => "InProgress",
    }
}

/// The tasks counted per kind, in [`TaskKind::ALL`]'s order, kinds without tasks left out.
pub fn task_counts(tasks: &[Task]) -> Vec<TaskCount> {
    TaskKind::ALL
        .into_iter()
        .filter_map(|kind| {
            let of: Vec<&Task> = tasks.iter().filter(|t| t.kind == kind).collect();
            let outstanding = of.iter().filter(|t| t.status.is_outstanding()).count() as u32;
            (!of.is_empty()).then(|| TaskCount {
                kind,
                total: of.len() as u32,
                outstanding,
                completed: of.len() as u32 - outstanding,
            })
        })
        .collect()
}

/// Why `sections` is not an application's list of sections: a name outside the seven, or a
/// name twice.
pub fn check_sections(sections: &[Section]) -> Result<(), String> {
    for (i, s) in sections.iter().enumerate() {
        if !SECTION_NAMES.contains(&s.section_name.as_str()) {
            return Err(format!(
                "sections[{i}].sectionName: `{}` is not a wizard section; sections: {}",
                s.section_name,
                SECTION_NAMES.join(", ")
            ));
        }
        if s.status.trim().is_empty() {
            return Err(format!("sections[{i}].status: must not be empty"));
        }
        if sections[..i]
            .iter()
            .any(|o| o.section_name == s.section_name)
        {
            return Err(format!(
                "sections[{i}].sectionName: `{}` is named twice",
                s.section_name
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(kind: TaskKind, status: TaskStatus, required: bool, title: &str) -> Task {
        Task {
            id: Uuid::nil(),
            code: None,
            title: title.into(),
            kind,
            status,
            is_required: required,
            borrower_id: None,
            due_date: None,
            completed_timestamp_utc: None,
            document_ids: vec![],
        }
    }

    fn complete() -> Vec<Section> {
        SECTION_NAMES
            .iter()
            .map(|n| Section {
                section_name: n.to_string(),
                status: "Completed".into(),
                task_code: None,
                missing_fields: vec![],
            })
            .collect()
    }

    #[test]
    fn the_blocking_documents_are_the_reports_document_blockers() {
        let tasks = vec![
            task(
                TaskKind::BorrowerDocument,
                TaskStatus::Rejected,
                true,
                "W-2",
            ),
            task(TaskKind::BorrowerDocument, TaskStatus::Accepted, true, "ID"),
            task(
                TaskKind::BorrowerDocument,
                TaskStatus::Outstanding,
                true,
                "Bank",
            ),
            task(
                TaskKind::BorrowerDocument,
                TaskStatus::Requested,
                false,
                "Gift",
            ),
            task(
                TaskKind::Condition,
                TaskStatus::Requested,
                true,
                "Appraisal",
            ),
        ];
        let named: Vec<String> = report(&complete(), &tasks, false)
            .submit_blockers
            .unwrap()
            .into_iter()
            .filter_map(|b| {
                let t = b.strip_prefix("Required document '")?;
                Some(t[..t.find('\'').unwrap()].to_string())
            })
            .collect();
        assert_eq!(blocking_documents(&tasks), ["Bank", "W-2"]);
        assert_eq!(blocking_documents(&tasks), named);
    }

    #[test]
    fn only_required_borrower_documents_block() {
        let tasks = vec![
            task(TaskKind::Verification, TaskStatus::Requested, true, "VOE"),
            task(
                TaskKind::BorrowerDocument,
                TaskStatus::Requested,
                false,
                "Gift letter",
            ),
            task(
                TaskKind::BorrowerDocument,
                TaskStatus::Uploaded,
                true,
                "Pay stubs",
            ),
        ];
        let r = report(&complete(), &tasks, false);
        assert!(r.is_ready_to_submit);
        assert_eq!(readiness(&r, false), "ReadyToSubmit");
        let blocked = vec![task(
            TaskKind::BorrowerDocument,
            TaskStatus::Waived,
            true,
            "W-2",
        )];
        let r = report(&complete(), &blocked, false);
        assert_eq!(
            r.submit_blockers,
            Some(vec!["Required document 'W-2' is Waived".to_string()])
        );
        assert_eq!(readiness(&r, false), "InProgress");
        assert_eq!(
            readiness(&report(&complete(), &[], true), true),
            "Submitted"
        );
    }

    #[test]
    fn tasks_are_counted_per_kind_in_order() {
        let tasks = vec![
            task(TaskKind::Condition, TaskStatus::Rejected, true, "a"),
            task(TaskKind::BorrowerDocument, TaskStatus::Accepted, true, "b"),
            task(TaskKind::BorrowerDocument, TaskStatus::Requested, true, "c"),
            task(TaskKind::BorrowerDocument, TaskStatus::Waived, false, "d"),
        ];
        let counts = task_counts(&tasks);
        assert_eq!(counts.len(), 2);
        assert_eq!(
            (
                counts[0].kind,
                counts[0].total,
                counts[0].outstanding,
                counts[0].completed
            ),
            (TaskKind::BorrowerDocument, 3, 1, 2)
        );
        assert_eq!(
            (counts[1].kind, counts[1].outstanding, counts[1].completed),
            (TaskKind::Condition, 1, 0)
        );
        let outstanding: Vec<&str> = TaskStatus::ALL
            .into_iter()
            .filter(|s| s.is_outstanding())
            .map(TaskStatus::as_str)
            .collect();
        assert_eq!(outstanding, ["Outstanding", "Requested", "Rejected"]);
    }

    #[test]
    fn sections_outside_the_seven_or_twice_are_refused() {
        let mut s = complete();
        assert!(check_sections(&s).is_ok());
        s[1].section_name = "About You".into();
        assert!(check_sections(&s).unwrap_err().contains("named twice"));
        s[1].section_name = "Hobbies".into();
        assert!(check_sections(&s)
            .unwrap_err()
            .contains("`Hobbies` is not a wizard section"));
        s[1].section_name = "Loan & Property".into();
        s[2].status = " ".into();
        assert!(check_sections(&s)
            .unwrap_err()
            .contains("sections[2].status"));
        // Deserialised strictly: an unknown field is refused.
        let bad = serde_json::json!({"sectionName": "Assets", "status": "Completed", "x": 1});
        assert!(serde_json::from_value::<Section>(bad).is_err());
        let bad = serde_json::json!({"id": Uuid::nil(), "title": "t", "kind": "Loan",
            "status": "Requested", "isRequired": true});
        assert!(serde_json::from_value::<Task>(bad).is_err());
    }
}
