//! The Data Warehouse datasets as tools describe them to a model: each dataset's fields with
//! their types, which identify a row (counted only, never grouped on or compared: the host
//! refuses it without a listing grant), and which hold a small list of values worth listing.
//! The host's catalog is the authority (`loanhost plugin fields`); a test keeps this table
//! equal to it.

/// A field's type, as a query's values are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    /// Text.
    Text,
    /// A UTC instant, RFC 3339.
    Timestamp,
}

impl FieldKind {
    /// The name tools give the type.
    pub const fn name(self) -> &'static str {
        match self {
            FieldKind::Text => "text",
            FieldKind::Timestamp => "timestamp",
        }
    }
}

/// One field of a warehouse dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WarehouseField {
    /// Its name in queries.
    pub name: &'static str,
    /// Its type.
    pub kind: FieldKind,
    /// Whether it identifies one row (a loan, a deal): only counted.
    pub identifying: bool,
    /// Whether its values are a small list (listed by `get_data_warehouse_fields`).
    pub enumerable: bool,
    /// What it holds.
    pub description: &'static str,
}

/// One warehouse dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WarehouseDataset {
    /// Its name in queries.
    pub name: &'static str,
    /// What a row is.
    pub description: &'static str,
    /// Its fields.
    pub fields: &'static [WarehouseField],
}

const fn field(
    name: &'static str,
    kind: FieldKind,
    identifying: bool,
    enumerable: bool,
    description: &'static str,
) -> WarehouseField {
    WarehouseField {
        name,
        kind,
        identifying,
        enumerable,
        description,
    }
}

/// The warehouse's datasets.
pub const DATASETS: [WarehouseDataset; 2] = [
    WarehouseDataset {
        name: "dw-loan-milestones",
        description: "One row per loan per warehouse milestone reached, with when it was reached \
                      (organisation-wide).",
        fields: &[
            field(
                "loanId",
                FieldKind::Text,
                true,
                false,
                "The loan (count it with CountDistinct).",
            ),
            field(
                "milestone",
                FieldKind::Text,
                false,
                true,
                "The warehouse milestone reached.",
            ),
            field(
                "occurredAt",
                FieldKind::Timestamp,
                false,
                false,
                "When it was reached.",
            ),
        ],
    },
    WarehouseDataset {
        name: "dw-deals",
        description: "One row per MLO recruiting deal, with its current pipeline stage \
                      (organisation-wide).",
        fields: &[
            field(
                "id",
                FieldKind::Text,
                true,
                false,
                "The deal (count it with CountDistinct).",
            ),
            field(
                "createdAt",
                FieldKind::Timestamp,
                false,
                false,
                "When the deal was created.",
            ),
            field(
                "stage",
                FieldKind::Text,
                false,
                true,
                "The deal's current pipeline stage.",
            ),
        ],
    },
];

/// The dataset named `name`.
pub fn dataset(name: &str) -> Option<&'static WarehouseDataset> {
    DATASETS.iter().find(|d| d.name == name)
}

impl WarehouseDataset {
    /// Its field named `name`.
    pub fn field(&self, name: &str) -> Option<&'static WarehouseField> {
        self.fields.iter().find(|f| f.name == name)
    }
}
