//! The statement a planner hands to an executor: its SQL, bound parameters, column decoders,
//! the host's fold or order of its groups, and how PostgreSQL plans it.

use super::columns::Out;
use super::columns::P;
use super::fold::SetFold;
use super::host_order::HostOrder;
use crate::data::report_store::Plans;

/// A compiled statement.
#[derive(Clone)]
pub(super) struct Compiled {
    pub(super) sql: String,
    pub(super) params: Vec<P>,
    pub(super) outs: Vec<Out>,
    pub(super) columns: Vec<String>,
    pub(super) limit: u32,
    /// The period-set plan's fold: the statement's rows are sets, folded by the host.
    pub(super) fold: Option<SetFold>,
    /// The host's order of the statement's groups, which arrive unordered ([`finish`]).
    pub(super) order: Option<HostOrder>,
    /// The statement that answers when this one's fold meets what it cannot label (a set
    /// with a status that has no bit of its own, `SetFold::sets_only`): run instead.
    pub(super) full: Option<Box<Compiled>>,
    /// How PostgreSQL plans it: generic for a person's statements that nothing but the
    /// scope's indexes can serve ([`plans_for`], and the period sets' own rule).
    pub(super) plans: Plans,
}
