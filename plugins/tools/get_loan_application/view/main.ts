// The view of get_loan_application: whether the file can be submitted now and what blocks it
// (the section-completion report's own reasons, in its order), the seven wizard sections in
// sidebar order with their status and the required fields still empty, and the tasks by kind.
// It shows only what the tool answered: a borrower's name only when the caller may read it.
import { startView, table } from "@loanhost/views";

interface Section {
  sectionName: string | null;
  taskCode: string | null;
  status?: string | null;
  missingFields?: string[] | null;
}
interface Completion {
  sections: Section[] | null;
  allSectionsComplete: boolean;
  isReadyToSubmit: boolean;
  submitBlockers: string[] | null;
}
interface Task {
  title: string;
  kind: string;
  status: string;
  isRequired: boolean;
}
interface Summary {
  kind: string;
  total: number;
  outstanding: number;
  completed: number;
}
interface Person {
  firstName?: string | null;
  lastName?: string | null;
}
interface Result {
  id: string;
  sectionCompletion: Completion;
  loanInfo: {
    loanNumber?: string | null;
    loanStatus?: string | null;
    loanPurpose?: string | null;
    loanOfficerName?: string | null;
    readiness?: string | null;
    borrower?: Person | null;
    coBorrower?: Person | null;
  };
  tasks: Task[];
  taskSummaries: Summary[];
  updatedTimestampUtc?: string | null;
}

/** A section's status as words: `NotStarted` → `Not started`. */
function words(status: string): string {
  const spaced = status.replace(/([a-z])([A-Z])/g, "$1 $2");
  return spaced.charAt(0) + spaced.slice(1).toLowerCase();
}

function el(tag: string, className?: string, text?: string): HTMLElement {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

function name(p: Person | null | undefined): string | undefined {
  const parts = [p?.firstName, p?.lastName].filter((s): s is string => !!s && s.trim() !== "");
  return parts.length ? parts.join(" ") : undefined;
}

const COMPLETE = ["Completed", "Accepted"];

startView<Result>({
  title: (r) => {
    const who = name(r.loanInfo.borrower);
    const loan = r.loanInfo.loanNumber ? `Loan ${r.loanInfo.loanNumber}` : "Loan application";
    return who ? `${loan}: ${who}` : loan;
  },
  noun: "application",
  failedText: "The application could not be read.",
  isEmpty: () => false,
  render: (r) => {
    const c = r.sectionCompletion;
    const submitted = r.loanInfo.readiness === "Submitted";
    const verdict = el(
      "p",
      `readiness ${c.isReadyToSubmit ? "ready" : submitted ? "submitted" : "blocked"}`,
      c.isReadyToSubmit ? "Ready to submit" : submitted ? "Already submitted" : "Not ready to submit",
    );
    verdict.setAttribute("role", "status");
    const facts = [
      r.loanInfo.loanStatus,
      r.loanInfo.loanPurpose,
      r.loanInfo.loanOfficerName ? `Loan officer ${r.loanInfo.loanOfficerName}` : undefined,
      name(r.loanInfo.coBorrower) ? `Co-borrower ${name(r.loanInfo.coBorrower)}` : undefined,
    ].filter((s): s is string => !!s);
    const out: Node[] = [verdict];
    if (facts.length) out.push(el("p", "facts", facts.join(" · ")));

    const blockers = c.submitBlockers ?? [];
    out.push(el("h2", undefined, "What blocks submission"));
    if (blockers.length) {
      const list = el("ul", "blockers");
      for (const b of blockers) list.append(el("li", undefined, b));
      out.push(list);
    } else {
      out.push(el("p", "status", "Nothing: every section is complete and every required document is in."));
    }

    out.push(el("h2", undefined, "Sections"));
    const sections = el("ol", "sections");
    for (const s of c.sections ?? []) {
      const status = s.status ?? "NotStarted";
      const item = el("li", COMPLETE.includes(status) ? "complete" : "open");
      item.append(el("span", "section-name", s.sectionName ?? "Section"));
      const badge = el("span", "badge", words(status));
      badge.dataset.status = status;
      item.append(badge);
      const missing = s.missingFields ?? [];
      if (missing.length) item.append(el("small", "missing", `Still empty: ${missing.join(", ")}`));
      sections.append(item);
    }
    out.push(sections);

    if (r.taskSummaries.length) {
      out.push(
        table(
          "Tasks by kind",
          ["Kind", "Tasks", "Outstanding", "Completed"],
          r.taskSummaries.map((s) => [words(s.kind), s.total, s.outstanding, s.completed]),
        ),
      );
    }
    if (r.tasks.length) {
      out.push(
        table(
          "Tasks",
          ["Task", "Kind", "Status", "Required"],
          r.tasks.map((t) => [t.title, words(t.kind), words(t.status), t.isRequired ? "yes" : "no"]),
        ),
      );
    }
    return out;
  },
});
