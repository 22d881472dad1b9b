//! What a registry says, made safe to use: a manifest digest checked to be `sha256:` and 64
//! lower-case hex digits before it names anything (a cache folder, a pull), and registry text
//! (error bodies, media types, titles) escaped and cut short before it is logged, stored or
//! shown, so that no registry can write a line of its own into the host's log.

use std::fmt;

/// The longest registry text kept in a message, in characters.
pub const MAX_REGISTRY_TEXT_CHARS: usize = 300;

/// A manifest digest as a host uses it: `sha256:` and 64 lower-case hex digits, nothing else.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Digest(String);

impl Digest {
    /// Checks `text`; the error says what is wrong with it, with the text itself cleaned.
    pub fn parse(text: &str) -> Result<Digest, String> {
        let hex = text.strip_prefix("sha256:").ok_or_else(|| {
            format!(
                "the digest `{}` is not sha256:<64 lower-case hex digits>",
                clean(text)
            )
        })?;
        if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(format!(
                "the digest `{}` is not sha256:<64 lower-case hex digits>",
                clean(text)
            ));
        }
        Ok(Digest(text.to_string()))
    }

    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Digest {
        use sha2::Digest as _;
        Digest(format!("sha256:{:x}", sha2::Sha256::digest(bytes)))
    }

    /// The 64 hex digits: the only text a cache path is built from.
    pub fn hex(&self) -> &str {
        &self.0["sha256:".len()..]
    }

    /// `sha256:…`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `text` from outside the trust boundary, fit for one log line: control characters
/// (newlines, carriage returns, escapes) written as `\n`, `\u{1b}` …, and at most
/// [`MAX_REGISTRY_TEXT_CHARS`] characters, with `…` where it was cut.
pub fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_REGISTRY_TEXT_CHARS + 8));
    for (n, c) in text.chars().enumerate() {
        if n == MAX_REGISTRY_TEXT_CHARS {
            out.push('…');
            break;
        }
        if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202e}') {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{clean, Digest, MAX_REGISTRY_TEXT_CHARS};

    #[test]
    fn only_a_sha256_of_64_lower_case_hex_digits_is_a_digest() {
        // Arrange
        let good = format!("sha256:{}", "0123456789abcdef".repeat(4));
        let hostile = [
            "sha256:/some/dir".to_string(),
            "sha256:../..".to_string(),
            "sha256:".to_string(),
            format!("sha256:{}", "A".repeat(64)),
            format!("sha256:{}", "a".repeat(63)),
            format!("sha256:{}", "a".repeat(65)),
            format!("sha256:{}/..", "a".repeat(61)),
            format!("sha512:{}", "a".repeat(64)),
            "a".repeat(64),
            format!("sha256:{}\n", "a".repeat(64)),
            format!(" sha256:{}", "a".repeat(64)),
        ];

        // Act / Assert
        let digest = Digest::parse(&good).unwrap();
        assert_eq!(digest.hex(), &good[7..]);
        assert_eq!(digest.to_string(), good);
        for text in &hostile {
            let why = Digest::parse(text).unwrap_err();
            assert!(why.contains("is not sha256:<64"), "{text:?}: {why}");
            assert!(!why.contains('\n'), "{why:?}");
        }
        assert_eq!(Digest::of(b"").hex().len(), 64);
    }

    #[test]
    fn registry_text_cannot_start_a_line_of_its_own_and_is_cut_short() {
        // Arrange
        let forged = "oops\n2026-12-01T00:00:00Z  INFO loanhost: plugin loaded\r\u{1b}[2J";
        let long = "x".repeat(10_000);

        // Act
        let one = clean(forged);
        let cut = clean(&long);

        // Assert
        assert!(!one.contains(['\n', '\r', '\u{1b}']), "{one}");
        assert!(one.contains("\\n2026-12-01"), "{one}");
        assert_eq!(cut.chars().count(), MAX_REGISTRY_TEXT_CHARS + 1);
        assert!(cut.ends_with('…'));
    }
}
