//! The seed's organisation: companies with their processors, assistants, officers and a
//! ConciergeKey manager each, referrers outside any company, and the well-known demo users
//! bound to them, written as staff lines in the order the generator draws them.

use rand::rngs::StdRng;

use super::people::{uuid, Person, Staff, DEMO_DOMAIN};

/// Who the loans are given to.
pub(super) struct Org {
    /// The companies' ids.
    pub(super) companies: Vec<String>,
    /// Each officer and the index of their company.
    pub(super) officers: Vec<(Person, usize)>,
    /// Each company's two assistants.
    pub(super) assistants: Vec<Vec<Person>>,
    /// Each company's two processors.
    pub(super) processors: Vec<Vec<Person>>,
    /// Referring agents, of no company.
    pub(super) referrers: Vec<Person>,
}

/// Hires the organisation for `loans` loans: a company per 20,000 loans (2 to 50), an
/// officer per 150 loans (at least 3 a company), half as many referrers.
pub(super) fn hire(rng: &mut StdRng, staff: &mut Staff, loans: u64) -> std::io::Result<Org> {
    let companies: Vec<String> = (0..(loans / 20_000).clamp(2, 50))
        .map(|_| uuid(rng))
        .collect();
    let officers_per_company = ((loans / 150) / companies.len() as u64).max(3) as usize;
    let mut officers: Vec<(Person, usize)> = Vec::new();
    let mut assistants: Vec<Vec<Person>> = Vec::new();
    let mut processors: Vec<Vec<Person>> = Vec::new();
    let mut referrers: Vec<Person> = Vec::new();
    for (ci, company) in companies.iter().enumerate() {
        let c = Some(company.as_str());
        let ps = (0..2)
            .map(|_| staff.hire(rng, "processor", c, |_| &["Processor"], &[]))
            .collect::<std::io::Result<_>>()?;
        processors.push(ps);
        let asst = (0..2)
            .map(|_| staff.hire(rng, "assistant", c, |_| &["Agent"], &[]))
            .collect::<std::io::Result<_>>()?;
        assistants.push(asst);
        let mut company_officers = Vec::new();
        for _ in 0..officers_per_company {
            let p = staff.hire(
                rng,
                "officer",
                c,
                |k| {
                    if k % 7 == 0 {
                        &["DualLicensedAgent"]
                    } else {
                        &["Agent"]
                    }
                },
                &[],
            )?;
            company_officers.push(p.id.clone());
            officers.push((p, ci));
        }
        // A ConciergeKey manager for half of the company's officers.
        let managed: Vec<String> = company_officers.iter().step_by(2).cloned().collect();
        staff.hire(rng, "concierge", c, |_| &["ConciergeKey"], &managed)?;
    }
    for _ in 0..(officers.len() / 2).max(3) {
        let p = staff.hire(
            rng,
            "referrer",
            None,
            |k| {
                if k % 3 == 0 {
                    &["Agent", "PreLicensed"]
                } else {
                    &["Agent"]
                }
            },
            &[],
        )?;
        referrers.push(p);
    }
    Ok(Org {
        companies,
        officers,
        assistants,
        processors,
        referrers,
    })
}

/// The well-known demo users: an admin, and one of each role bound to real loans; then
/// people who hold several roles at once.
pub(super) fn demo_users(rng: &mut StdRng, staff: &mut Staff, org: &Org) -> std::io::Result<()> {
    let Org {
        companies,
        officers,
        processors,
        referrers,
        ..
    } = org;
    let first_company = &companies[0];
    let demo_officer = &officers[0].0;
    let demo_referrer = &referrers[0];
    staff.line(
        &uuid(rng),
        &format!("admin@{DEMO_DOMAIN}"),
        "Ada",
        "Admin",
        None,
        &["Admin"],
        &[],
    )?;
    staff.line(
        &processors[0][0].id,
        &format!("processor@{DEMO_DOMAIN}"),
        "Pat",
        "Processor",
        Some(first_company),
        &["Processor"],
        &[],
    )?;
    let managed: Vec<String> = officers
        .iter()
        .filter(|(_, c)| *c == 0)
        .take(3)
        .map(|(p, _)| p.id.clone())
        .collect();
    staff.line(
        &uuid(rng),
        &format!("concierge@{DEMO_DOMAIN}"),
        "Cora",
        "Concierge",
        Some(first_company),
        &["ConciergeKey"],
        &managed,
    )?;
    staff.line(
        &demo_officer.id,
        &format!("agent@{DEMO_DOMAIN}"),
        "Alex",
        "Agent",
        Some(first_company),
        &["Agent"],
        &[],
    )?;
    staff.line(
        &demo_referrer.id,
        &format!("prelicensed@{DEMO_DOMAIN}"),
        "Pria",
        "Prelicensed",
        None,
        &["Agent", "PreLicensed"],
        &[],
    )?;
    // People who hold several roles at once (scope is the union over them). Each re-uses a
    // generated person's id, so its later line wins whole and the loans are unchanged.
    let last_company = companies.last().expect("at least two companies");
    let other_officers: Vec<String> = officers
        .iter()
        .filter(|(_, c)| *c == companies.len() - 1)
        .step_by(2)
        .map(|(p, _)| p.id.clone())
        .collect();
    staff.line(
        &officers[1].0.id,
        &format!("lead@{DEMO_DOMAIN}"),
        "Lee",
        "Lead",
        Some(first_company),
        &["Agent", "ConciergeKey"],
        &other_officers,
    )?;
    staff.line(
        &officers[2].0.id,
        &format!("officer-processor@{DEMO_DOMAIN}"),
        "Opal",
        "Officer-Processor",
        Some(last_company),
        &["DualLicensedAgent", "Processor"],
        &[],
    )?;
    staff.line(
        &referrers[1].id,
        &format!("referrer-concierge@{DEMO_DOMAIN}"),
        "Remy",
        "Referrer-Concierge",
        None,
        &["Agent", "PreLicensed", "ConciergeKey"],
        &[officers[0].0.id.clone()],
    )?;
    Ok(())
}
