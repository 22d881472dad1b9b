//! The seed's people: deterministic names and ids, and the staff lines (agents with their
//! roles, companies and managed agents) written as `agents.jsonl`.

use std::io::{BufWriter, Write};

use rand::rngs::StdRng;
use rand::Rng;
use serde_json::json;

pub(super) fn uuid(rng: &mut StdRng) -> String {
    uuid::Builder::from_random_bytes(rng.gen())
        .into_uuid()
        .hyphenated()
        .to_string()
}

pub(super) const FIRST: [&str; 16] = [
    "James",
    "Mary",
    "Robert",
    "Patricia",
    "John",
    "Jennifer",
    "Michael",
    "Linda",
    "David",
    "Elizabeth",
    "Maria",
    "Jose",
    "Wei",
    "Aisha",
    "Olga",
    "Sean",
];
pub(super) const LAST: [&str; 16] = [
    "Smith",
    "Johnson",
    "Williams",
    "Brown",
    "Jones",
    "Garcia",
    "Miller",
    "Davis",
    "Rodriguez",
    "Martinez",
    "Nguyen",
    "O'Brien",
    "Kowalski",
    "Haddad",
    "Chen",
    "Müller",
];
/// Writes `agents.jsonl`, numbering the generated people and counting the lines.
pub(super) struct Staff {
    pub(super) w: BufWriter<std::fs::File>,
    pub(super) n: usize,
    pub(super) written: u64,
}

pub(super) type Roles = &'static [&'static str];

impl Staff {
    /// One agent line.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn line(
        &mut self,
        id: &str,
        email: &str,
        first: &str,
        last: &str,
        company: Option<&str>,
        roles: &[&str],
        managed: &[String],
    ) -> std::io::Result<()> {
        self.written += 1;
        writeln!(
            self.w,
            "{}",
            json!({"id": id, "email": email, "firstName": first, "lastName": last, "companyId": company, "roles": roles, "managedAgentIds": managed})
        )
    }

    /// A new person `<kind><k>@…` (k numbers every generated person) with a random name and
    /// id, written as an agent with the roles `roles(k)`.
    pub(super) fn hire(
        &mut self,
        rng: &mut StdRng,
        kind: &str,
        company: Option<&str>,
        roles: impl Fn(usize) -> Roles,
        managed: &[String],
    ) -> std::io::Result<Person> {
        self.n += 1;
        let k = self.n;
        let (first, last) = (
            FIRST[rng.gen_range(0..FIRST.len())],
            LAST[rng.gen_range(0..LAST.len())],
        );
        let p = Person {
            id: uuid(rng),
            name: format!("{first} {last}"),
        };
        self.line(
            &p.id,
            &format!("{kind}{k}@{DEMO_DOMAIN}"),
            first,
            last,
            company,
            roles(k),
            managed,
        )?;
        Ok(p)
    }
}

pub(super) struct Person {
    pub(super) id: String,
    pub(super) name: String,
}

/// Domain of every seeded email.
pub const DEMO_DOMAIN: &str = "demo.loanhost.local";
