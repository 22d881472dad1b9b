//! Who may read a field of the catalog, and how ([`Exposure`]), and what the host holds that
//! no dataset exposes ([`WITHHELD`]): the one table of personal data that `loanhost plugin
//! fields` prints.

/// Who may read a field, and how: the catalog's one table of what identifies a loan or a
/// person (`loanhost plugin fields` prints it). Every field is also read only by a plugin whose
/// manifest grants it ([`crate::data::grant::Grant`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposure {
    /// Aggregate data: read, grouped on and compared by any plugin granted it.
    Open,
    /// A person's name (an officer's, a processor's, a referrer's): read only for callers who
    /// may read names (Admin, Processor, ConciergeKey), by any plugin granted it.
    Name,
    /// Identifies one loan or one deal (its id, its loan number): counted by any plugin granted
    /// it (`count-of`, `count-distinct`, `distinct-on`); read, grouped on, compared, or
    /// returned only by a plugin whose manifest declares a listing grant for the dataset.
    Identifying,
    /// A borrower's name: never aggregated, read only in a list (the listing capability, under a
    /// listing grant), for callers who may read borrowers' names
    /// ([`crate::identity::Identity::can_read_borrower_names`]).
    Borrower,
}

impl Exposure {
    /// The short name `loanhost plugin fields` prints.
    pub const fn as_str(self) -> &'static str {
        match self {
            Exposure::Open => "aggregate",
            Exposure::Name => "name",
            Exposure::Identifying => "identifying",
            Exposure::Borrower => "borrower",
        }
    }

    /// Who may read a field of this exposure, as the field reference says it.
    pub const fn who_reads(self) -> &'static str {
        match self {
            Exposure::Open => "aggregate: any plugin granted it",
            Exposure::Name => {
                "name: any plugin granted it, for callers with Admin, Processor or ConciergeKey"
            }
            Exposure::Identifying => {
                "identifying: counted by any plugin granted it; read only with a listing grant"
            }
            Exposure::Borrower => {
                "borrower: only listed, with a listing grant, for callers with Admin, Processor, \
                 ConciergeKey, Agent or DualLicensedAgent and without PreLicensed"
            }
        }
    }
}

/// Columns of the snapshot the host holds and no dataset exposes: a borrower's email never
/// leaves the host (the `searchText` filter matches it, and a borrower's names, inside the
/// database). (field name, what it holds).
pub const WITHHELD: &[(&str, &str)] = &[("borrowerEmail", "the borrower's email address")];
