//! The listing's cursors: a position in a list (the snapshot's generation, and the order value
//! and loan key of the last row given), sealed with ChaCha20-Poly1305 under the key every host
//! of a database shares (`listing_state.cursor_key`, schema v17) and bound, as the seal's
//! associated data, to what the list is of: the caller, the plugin and the query. A cursor
//! changed by one bit, replayed by another caller, or sent with another query does not open.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305, NONCE_LEN};

use super::store::{Db, DbError};

/// The prefix of every cursor this host issues (the format's version).
const PREFIX: &str = "lc1.";
/// Bytes of a sealed position: generation, phase, value present, value, key.
const POSITION_BYTES: usize = 8 + 1 + 1 + 8 + 8;
/// The longest text a cursor may be before it is opened (a real one is about 80 characters).
pub const MAX_CURSOR_CHARS: usize = 256;

/// Where a list stopped: the row after which the next page starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// The snapshot's generation the list was cut from.
    pub generation: i64,
    /// Whether the list had reached the rows whose order value is null (they come last).
    pub nulls: bool,
    /// The order value of the last row given (`None` in the null rows).
    pub value: Option<i64>,
    /// The loan key of the last row given (ties of the order value are broken by it).
    pub key: i64,
}

impl Position {
    fn to_bytes(self) -> [u8; POSITION_BYTES] {
        let mut b = [0u8; POSITION_BYTES];
        b[..8].copy_from_slice(&self.generation.to_be_bytes());
        b[8] = u8::from(self.nulls);
        b[9] = u8::from(self.value.is_some());
        b[10..18].copy_from_slice(&self.value.unwrap_or(0).to_be_bytes());
        b[18..].copy_from_slice(&self.key.to_be_bytes());
        b
    }

    fn from_bytes(b: &[u8]) -> Option<Position> {
        if b.len() != POSITION_BYTES || b[8] > 1 || b[9] > 1 {
            return None;
        }
        let int = |r: std::ops::Range<usize>| i64::from_be_bytes(b[r].try_into().ok()?).into();
        let value: Option<i64> = int(10..18);
        Some(Position {
            generation: int(0..8)?,
            nulls: b[8] == 1,
            value: if b[9] == 1 { value } else { None },
            key: int(18..26)?,
        })
    }
}

/// Why a cursor was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CursorError {
    /// Not one this deployment sealed for this caller, plugin and query (changed, another
    /// caller's, another query's, or not a cursor at all).
    #[error(
        "the cursor was not issued for this caller and this query (it was changed, belongs to \
         another caller, or was cut for another query): list again without a cursor"
    )]
    NotIssued,
}

/// The key that seals cursors.
pub struct CursorKey(LessSafeKey);

impl std::fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorKey(…)")
    }
}

impl CursorKey {
    /// A key of these bytes.
    pub fn from_bytes(bytes: &[u8; 32]) -> CursorKey {
        let key = UnboundKey::new(&CHACHA20_POLY1305, bytes).expect("a 32-byte key");
        CursorKey(LessSafeKey::new(key))
    }

    /// The database's key (schema v17), written by the first host that needs one: 32 random
    /// bytes, kept when another host wrote its own first.
    pub async fn load(db: &Db) -> Result<CursorKey, DbError> {
        let fresh = {
            use rand::RngCore as _;
            let mut key = [0u8; 32];
            rand::rngs::OsRng.fill_bytes(&mut key);
            hex(&key)
        };
        const CLAIM: &str =
            "UPDATE listing_state SET cursor_key = ? WHERE id = 1 AND cursor_key IS NULL";
        const READ: &str = "SELECT cursor_key FROM listing_state WHERE id = 1";
        let stored: Option<String> = match db {
            Db::Sqlite(p) => {
                sqlx::query(CLAIM).bind(&fresh).execute(p).await?;
                sqlx::query_scalar(READ).fetch_one(p).await?
            }
            Db::Postgres(p) => {
                sqlx::query(&super::store::number_placeholders(CLAIM))
                    .bind(&fresh)
                    .execute(p)
                    .await?;
                sqlx::query_scalar(READ).fetch_one(p).await?
            }
        };
        let bytes = stored.as_deref().and_then(unhex).ok_or_else(|| {
            DbError::Migrate("listing_state.cursor_key is not 32 hex bytes".into())
        })?;
        Ok(CursorKey::from_bytes(&bytes))
    }

    /// `position` sealed for `binding` (what the list is of), as the opaque text a plugin is
    /// given.
    pub fn seal(&self, binding: &[u8], position: Position) -> String {
        let mut nonce = [0u8; NONCE_LEN];
        {
            use rand::RngCore as _;
            rand::rngs::OsRng.fill_bytes(&mut nonce);
        }
        let mut sealed = position.to_bytes().to_vec();
        self.0
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(binding),
                &mut sealed,
            )
            .expect("sealing a short message");
        let mut out = nonce.to_vec();
        out.extend(sealed);
        format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(out))
    }

    /// The position sealed in `cursor` for `binding`.
    pub fn open(&self, binding: &[u8], cursor: &str) -> Result<Position, CursorError> {
        if cursor.len() > MAX_CURSOR_CHARS {
            return Err(CursorError::NotIssued);
        }
        let body = cursor.strip_prefix(PREFIX).ok_or(CursorError::NotIssued)?;
        let mut bytes = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| CursorError::NotIssued)?;
        if bytes.len() < NONCE_LEN {
            return Err(CursorError::NotIssued);
        }
        let mut sealed = bytes.split_off(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(&bytes).map_err(|_| CursorError::NotIssued)?;
        let plain = self
            .0
            .open_in_place(nonce, Aad::from(binding), &mut sealed)
            .map_err(|_| CursorError::NotIssued)?;
        Position::from_bytes(plain).ok_or(CursorError::NotIssued)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<[u8; 32]> {
    let text = text.trim();
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> CursorKey {
        CursorKey::from_bytes(&[7u8; 32])
    }

    const AT: Position = Position {
        generation: 3,
        nulls: false,
        value: Some(-1_700_000_000_000),
        key: 42,
    };

    #[test]
    fn a_sealed_position_opens_for_the_same_binding_only() {
        // Arrange
        let k = key();
        let cursor = k.seal(b"caller-a|query-1", AT);

        // Act / Assert
        assert_eq!(k.open(b"caller-a|query-1", &cursor), Ok(AT));
        assert_eq!(
            k.open(b"caller-b|query-1", &cursor),
            Err(CursorError::NotIssued)
        );
        assert_eq!(
            k.open(b"caller-a|query-2", &cursor),
            Err(CursorError::NotIssued)
        );
        let other = CursorKey::from_bytes(&[8u8; 32]);
        assert_eq!(
            other.open(b"caller-a|query-1", &cursor),
            Err(CursorError::NotIssued)
        );
    }

    #[test]
    fn a_cursor_changed_anywhere_does_not_open() {
        // Arrange
        let k = key();
        let cursor = k.seal(b"b", AT);

        // Act / Assert
        for i in PREFIX.len()..cursor.len() {
            let mut bytes = cursor.clone().into_bytes();
            bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
            let changed = String::from_utf8(bytes).unwrap();
            if changed != cursor {
                assert!(k.open(b"b", &changed).is_err(), "byte {i}");
            }
        }
        for junk in [
            "",
            "lc1.",
            "lc1.!!",
            "lc0.AAAA",
            &"x".repeat(MAX_CURSOR_CHARS + 1),
        ] {
            assert_eq!(k.open(b"b", junk), Err(CursorError::NotIssued), "{junk}");
        }
    }

    #[test]
    fn positions_in_the_null_rows_round_trip() {
        // Arrange
        let k = key();
        let at = Position {
            generation: i64::MAX,
            nulls: true,
            value: None,
            key: i64::MIN,
        };

        // Act / Assert
        assert_eq!(k.open(b"", &k.seal(b"", at)), Ok(at));
    }

    #[test]
    fn keys_are_read_back_from_their_hex() {
        assert_eq!(unhex(&hex(&[0xab; 32])), Some([0xab; 32]));
        assert_eq!(unhex("zz"), None);
    }
}
