//! `loanhost seed`: a realistic synthetic data set of any size, deterministic for a seed and a
//! "today". It writes the import files (so seeding and importing share one validation path):
//! companies with processors, officers, assistants, referrers, ConciergeKey managers and
//! pre-licensed agents; loans across all 45 statuses; LOS history walking plausible paths
//! (including `Rate Locked` and the post-closing moves); warehouse milestones; MLO deals; and
//! the gaps real data has (missing amounts, sparse closing dates).

use std::io::{BufWriter, Write};
use std::path::Path;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use time::{Date, Duration, OffsetDateTime, PrimitiveDateTime, Time};

use super::values::{LOAN_STATUSES, LOAN_TYPES, PURPOSES};
use crate::data::seed::org::Org;
use crate::data::seed::paths::{
    cents, history_path, warehouse_milestone, weighted_status, MLO_STAGES, STATES,
};
use crate::data::seed::people::{uuid, Staff, FIRST, LAST};

mod applications;
mod org;
mod paths;
mod people;
mod sheets;

pub use people::DEMO_DOMAIN;

/// Well-known demo users, one per role (the dev IdP's sign-in page lists them first).
pub const DEMO_USERS: [(&str, &str); 5] = [
    ("admin", "Admin"),
    ("processor", "Processor"),
    ("concierge", "ConciergeKey"),
    ("agent", "Agent"),
    ("prelicensed", "Agent,PreLicensed"),
];

/// How much to generate.
#[derive(Debug, Clone, Copy)]
pub struct SeedSpec {
    /// Number of loans.
    pub loans: u64,
    /// RNG seed.
    pub seed: u64,
    /// The date loans are generated back from.
    pub today: Date,
}

/// What was written.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SeedCounts {
    /// Agents.
    pub agents: u64,
    /// Loans.
    pub loans: u64,
    /// LOS history rows.
    pub history: u64,
    /// Warehouse milestone rows.
    pub milestones: u64,
    /// MLO deals.
    pub deals: u64,
    /// Officers' state licences.
    pub licenses: u64,
    /// Rows of the rate sheet.
    pub rates: u64,
    /// Loan applications.
    pub applications: u64,
}

/// Writes the eight import files into `dir`.
pub fn write_dir(spec: SeedSpec, dir: &Path) -> std::io::Result<SeedCounts> {
    std::fs::create_dir_all(dir)?;
    let mut rng = StdRng::seed_from_u64(spec.seed);
    let open = |name: &str| -> std::io::Result<BufWriter<std::fs::File>> {
        Ok(BufWriter::with_capacity(
            1 << 20,
            std::fs::File::create(dir.join(name))?,
        ))
    };
    let mut staff = Staff {
        w: open("agents.jsonl")?,
        n: 0,
        written: 0,
    };
    let mut files = Files {
        loans: open("loans.jsonl")?,
        history: open("los_status_history.jsonl")?,
        dw: open("dw_loan_milestones.jsonl")?,
        deals: open("dw_deals.jsonl")?,
        licensed: sheets::Licensed::new(),
        applications: applications::Applications::new(open("loan_applications.jsonl")?, spec.seed),
    };
    let mut counts = SeedCounts::default();
    let org = org::hire(&mut rng, &mut staff, spec.loans)?;
    org::demo_users(&mut rng, &mut staff, &org)?;

    let now = PrimitiveDateTime::new(spec.today, Time::from_hms(12, 0, 0).expect("valid time"))
        .assume_utc();
    for i in 0..spec.loans {
        write_loan(&mut rng, &org, now, i, &mut files, &mut counts)?;
    }
    write_deals(&mut rng, spec.loans, now, &mut files, &mut counts)?;
    let mut licenses = open("user_licenses.jsonl")?;
    counts.licenses =
        sheets::write_licenses(&mut licenses, spec.seed, spec.today.year(), &files.licensed)?;
    let mut pricing = open("pricing.jsonl")?;
    counts.rates = sheets::write_rate_sheet(&mut pricing, spec.seed, &spec.today.to_string())?;
    for w in [
        &mut licenses,
        &mut pricing,
        &mut staff.w,
        &mut files.loans,
        &mut files.history,
        &mut files.dw,
        &mut files.deals,
        &mut files.applications.w,
    ] {
        w.flush()?;
    }
    counts.agents = staff.written;
    counts.applications = files.applications.written;
    Ok(counts)
}

/// The files the seed writes beside `agents.jsonl`, and the states of each officer's loans
/// (their licences, written after the loans).
struct Files {
    loans: BufWriter<std::fs::File>,
    history: BufWriter<std::fs::File>,
    dw: BufWriter<std::fs::File>,
    deals: BufWriter<std::fs::File>,
    licensed: sheets::Licensed,
    applications: applications::Applications,
}

/// RFC 3339, as the import files write times.
fn iso(t: OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .expect("formattable")
}

/// Writes loan number `i + 1` (given to one of `org`'s officers), its LOS history and its
/// warehouse milestones.
fn write_loan(
    rng: &mut StdRng,
    org: &Org,
    now: OffsetDateTime,
    i: u64,
    files: &mut Files,
    counts: &mut SeedCounts,
) -> std::io::Result<()> {
    let Org {
        companies,
        officers,
        assistants,
        processors,
        referrers,
    } = org;
    let Files {
        loans,
        history,
        dw,
        licensed,
        applications,
        ..
    } = files;
    let id = uuid(rng);
    let (officer, ci) = &officers[rng.gen_range(0..officers.len())];
    let status_index = weighted_status(rng);
    let status = LOAN_STATUSES[status_index];
    let age_days = rng.gen_range(0..730i64);
    let status_date = now - Duration::days(age_days) - Duration::minutes(rng.gen_range(0..600));
    // Amounts in whole cents ($80,000 to $1,200,000 in $5 steps), written once as decimals.
    let amount_cents: Option<u64> = if rng.gen_bool(0.05) {
        None
    } else {
        Some(rng.gen_range(16_000u64..240_000) * 500)
    };
    let referrer = rng
        .gen_bool(0.35)
        .then(|| &referrers[rng.gen_range(0..referrers.len())]);
    let assistant = rng
        .gen_bool(0.3)
        .then(|| &assistants[*ci][rng.gen_range(0..2)]);
    let processor = rng
        .gen_bool(0.8)
        .then(|| &processors[*ci][rng.gen_range(0..2)]);
    let (first, last) = (
        FIRST[rng.gen_range(0..FIRST.len())],
        LAST[rng.gen_range(0..LAST.len())],
    );
    let closing = rng
        .gen_bool(0.4)
        .then(|| status_date + Duration::days(rng.gen_range(20..60)));
    let locked = amount_cents
        .filter(|_| rng.gen_bool(0.6))
        .map(|c| cents(c / 100));
    let estimated = amount_cents
        .filter(|_| rng.gen_bool(0.85))
        .map(|c| cents(c / 80));
    let amount = amount_cents.map(cents);
    let loan_type = (!rng.gen_bool(0.03)).then(|| LOAN_TYPES[rng.gen_range(0..LOAN_TYPES.len())]);
    let purpose = (!rng.gen_bool(0.03)).then(|| PURPOSES[rng.gen_range(0..PURPOSES.len())]);
    let line = json!({
            "id": id,
            "loanNumber": format!("LN{:08}", i + 1),
            "borrowerFirstName": first,
            "borrowerLastName": last,
            "borrowerEmail": format!("{}.{}{}@example.com", first.to_lowercase(), last.to_lowercase().replace(['\'', 'ü'], ""), i),
            "status": status,
            "statusDate": iso(status_date),
            "loanType": loan_type,
            "purpose": purpose,
            "estimatedClosingDate": closing.map(iso),
            "updated": iso(status_date + Duration::hours(rng.gen_range(0..72))),
            "loanAmount": amount,
            "lockedCompensation": locked,
            "estimatedCompensation": estimated,
            "propertyState": STATES[rng.gen_range(0..STATES.len())],
            "companyId": companies[*ci],
            "loanOfficerId": officer.id,
            "loanOfficerName": officer.name,
            "loanAssistantId": assistant.map(|p| &p.id),
            "processorId": processor.map(|p| &p.id),
            "processorName": processor.map(|p| &p.name),
            "referringAgentId": referrer.map(|p| &p.id),
            "referringAgentName": referrer.map(|p| &p.name),
    });
    writeln!(loans, "{line}")?;
    applications.maybe_write(applications::LoanFacts {
        line: &line,
        status_date,
    })?;
    if let Some(state) = STATES.iter().find(|s| line["propertyState"] == **s) {
        licensed
            .entry(officer.id.clone())
            .or_default()
            .insert(state);
    }
    counts.loans += 1;

    // History: 85% of loans are synced to the LOS.
    if rng.gen_bool(0.85) {
        let path = history_path(status, rng);
        let steps = path.len() as i64;
        for (k, step) in path.iter().enumerate() {
            let at = status_date
                - Duration::days((steps - 1 - k as i64) * rng.gen_range(1..9))
                - Duration::minutes(rng.gen_range(0..300));
            writeln!(
                history,
                "{}",
                json!({"loanId": id, "status": step, "occurredAt": iso(at)})
            )?;
            counts.history += 1;
            if let Some(m) = warehouse_milestone(step) {
                writeln!(
                    dw,
                    "{}",
                    json!({"loanId": id, "milestone": m, "occurredAt": iso(at)})
                )?;
                counts.milestones += 1;
            }
        }
    }
    Ok(())
}

/// Writes the MLO deals: one per 40 loans, at least 20.
fn write_deals(
    rng: &mut StdRng,
    loans: u64,
    now: OffsetDateTime,
    files: &mut Files,
    counts: &mut SeedCounts,
) -> std::io::Result<()> {
    for _ in 0..(loans / 40).max(20) {
        let created =
            now - Duration::days(rng.gen_range(0..540)) - Duration::minutes(rng.gen_range(0..1440));
        let stage = MLO_STAGES[rng.gen_range(0..MLO_STAGES.len())];
        writeln!(
            files.deals,
            "{}",
            json!({"id": uuid(rng), "createdAt": iso(created), "stage": stage})
        )?;
        counts.deals += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::import::FILES;

    fn files(spec: SeedSpec) -> (Vec<Vec<u8>>, SeedCounts) {
        let dir = tempfile::tempdir().unwrap();
        let counts = write_dir(spec, dir.path()).unwrap();
        let bytes = FILES
            .iter()
            .map(|f| std::fs::read(dir.path().join(f)).unwrap())
            .collect();
        (bytes, counts)
    }

    fn spec(seed: u64) -> SeedSpec {
        SeedSpec {
            loans: 400,
            seed,
            today: Date::from_calendar_date(2027, time::Month::January, 2).unwrap(),
        }
    }

    #[test]
    fn the_same_seed_writes_byte_identical_files() {
        // Arrange + Act
        let (a, counts_a) = files(spec(42));
        let (b, counts_b) = files(spec(42));
        let (other, _) = files(spec(43));

        // Assert
        for (i, f) in FILES.iter().enumerate() {
            assert!(!a[i].is_empty(), "{f} is empty");
            assert!(a[i] == b[i], "{f} differs between two runs of seed 42");
            assert!(a[i] != other[i], "{f} is the same for seeds 42 and 43");
        }
        assert_eq!(counts_a, counts_b);
        assert_eq!(counts_a.loans, 400);
    }

    #[test]
    fn the_seed_has_callers_with_several_roles() {
        // Arrange + Act
        let (a, _) = files(spec(1));
        let agents = String::from_utf8(a[0].clone()).unwrap();

        // Assert: each multi-role person's last line holds the roles together.
        for (email, roles) in [
            ("lead@", r#"["Agent","ConciergeKey"]"#),
            ("officer-processor@", r#"["DualLicensedAgent","Processor"]"#),
            (
                "referrer-concierge@",
                r#"["Agent","PreLicensed","ConciergeKey"]"#,
            ),
        ] {
            let line = agents
                .lines()
                .find(|l| l.contains(&format!("\"email\":\"{email}")))
                .unwrap_or_else(|| panic!("no {email}"));
            assert!(line.contains(&format!("\"roles\":{roles}")), "{line}");
        }
    }
}
