//! Every limit of a structured query, in one place: rows, text, lists, maps and filters.

pub use crate::data::store::STATEMENT_TIMEOUT;

/// Most rows a query returns, whatever its limit.
pub const ROW_CAP: u32 = 10_000;
/// Longest `filter.searchText`, in characters.
pub const MAX_SEARCH_CHARS: usize = 200;
/// Most words in `filter.searchText` (each is one `LIKE`).
pub const MAX_SEARCH_WORDS: usize = 8;
/// Most values in a filter array or an any-of predicate.
pub const MAX_LIST_VALUES: usize = 200;
/// Longest text value in a filter or predicate, in bytes.
pub const MAX_VALUE_BYTES: usize = 256;
/// Longest filter (JSON text), in bytes.
pub const MAX_FILTER_BYTES: usize = 16 * 1024;
/// Most entries of a value→label map.
pub const MAX_MAP_ENTRIES: usize = 256;
/// Longest label of a value→label map, in bytes: labels are copied into every result row.
pub const MAX_LABEL_BYTES: usize = 64;
