//! The key that seals the facade's pending sign-ins and binds its codes: read from its file,
//! or made once (32 random bytes, mode 0600) and shared by hosts that share the file.

use std::path::Path;

/// The key that seals pending requests and binds codes.
pub struct CallbackKey(pub(super) Vec<u8>);

impl CallbackKey {
    /// The key in `path`, made (32 random bytes, mode 0600) when there is none.
    pub fn load_or_create(path: &Path) -> std::io::Result<CallbackKey> {
        let bytes = crate::secret_file::read_or_create(path, || {
            use rand::RngCore as _;
            let mut key = vec![0u8; 32];
            rand::rngs::OsRng.fill_bytes(&mut key);
            Ok(key)
        })?;
        if bytes.len() < 32 {
            return Err(std::io::Error::other(format!(
                "{} holds {} bytes; a key needs 32",
                path.display(),
                bytes.len()
            )));
        }
        Ok(CallbackKey(bytes))
    }

    /// A key of these bytes (tests).
    pub fn from_bytes(bytes: &[u8]) -> CallbackKey {
        CallbackKey(bytes.to_vec())
    }
}
