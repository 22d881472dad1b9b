//! The audit log's chain: every line numbered (`seq`), naming the seal of the line before it
//! (`prev`), and sealed (`seal`) with an HMAC-SHA256, under the host's audit key, of the line
//! up to its seal. Whoever edits the file without the key cannot seal a line again, so a line
//! changed, removed, inserted or moved breaks the chain where it was. The chain's head (the
//! last line's number and seal, itself sealed) is kept beside a file log (`<log>.head`), so a
//! host restarted over a rotated, empty log continues the same chain. Imports nothing of ours.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Hex digits of a seal.
pub const SEAL_HEX: usize = 64;
/// The seal before a chain's first line.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// How a sealed line ends: `,"seal":"<64 hex>"}`.
const SEAL_PREFIX: &str = ",\"seal\":\"";
const SEAL_SUFFIX_LEN: usize = SEAL_PREFIX.len() + SEAL_HEX + 2;

/// The last sealed line of a chain: its number and seal (`seq` 0 and [`GENESIS`]: none yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// The last line's `seq`.
    pub seq: u64,
    /// The last line's `seal`.
    pub seal: String,
}

impl Head {
    /// A chain with no line yet.
    pub fn start() -> Head {
        Head {
            seq: 0,
            seal: GENESIS.to_string(),
        }
    }
}

fn mac(key: &[u8; 32], parts: &[&[u8]]) -> String {
    let mut m = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    for p in parts {
        m.update(p);
    }
    hex::encode(m.finalize().into_bytes())
}

/// `entry` (a JSON object) sealed as the line after `head`, newline included; `head` becomes
/// that line.
pub fn seal(key: &[u8; 32], head: &mut Head, entry: &[u8]) -> Vec<u8> {
    let open = entry.strip_suffix(b"}").unwrap_or(entry);
    let seq = head.seq + 1;
    let mut line = Vec::with_capacity(entry.len() + 180);
    line.extend_from_slice(open);
    if open.len() > 1 {
        line.push(b',');
    }
    line.extend_from_slice(format!("\"seq\":{seq},\"prev\":\"{}\"", head.seal).as_bytes());
    let sealed = mac(key, &[&line, b"}"]);
    line.extend_from_slice(format!("{SEAL_PREFIX}{sealed}\"}}\n").as_bytes());
    *head = Head { seq, seal: sealed };
    line
}

/// One line as read back: its number, the seal it names before it, and its own seal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sealed {
    /// `seq`.
    pub seq: u64,
    /// `prev`.
    pub prev: String,
    /// `seal`.
    pub seal: String,
}

/// Why a line does not read as a sealed one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unsealed {
    /// No seal, or not a JSON object with `seq` and `prev`.
    #[error("it is not a sealed audit line ({0})")]
    Malformed(&'static str),
    /// The seal does not match the line.
    #[error(
        "its seal does not match its content: the line was changed, or written without the key"
    )]
    Forged,
}

/// Reads one line (without its newline) and checks its seal under `key`.
pub fn open(key: &[u8; 32], line: &[u8]) -> Result<Sealed, Unsealed> {
    if line.len() < SEAL_SUFFIX_LEN || !line.ends_with(b"\"}") {
        return Err(Unsealed::Malformed("no seal at its end"));
    }
    let (body, tail) = line.split_at(line.len() - SEAL_SUFFIX_LEN);
    let seal = tail
        .strip_prefix(SEAL_PREFIX.as_bytes())
        .and_then(|t| t.strip_suffix(b"\"}"))
        .and_then(|s| std::str::from_utf8(s).ok())
        .filter(|s| is_seal(s))
        .ok_or(Unsealed::Malformed("no seal at its end"))?;
    let expected = mac(key, &[body, b"}"]);
    if !constant_time_eq(expected.as_bytes(), seal.as_bytes()) {
        return Err(Unsealed::Forged);
    }
    let mut object = body.to_vec();
    object.push(b'}');
    let value: serde_json::Value =
        serde_json::from_slice(&object).map_err(|_| Unsealed::Malformed("not a JSON object"))?;
    let seq = value["seq"].as_u64().ok_or(Unsealed::Malformed("no seq"))?;
    let prev = value["prev"]
        .as_str()
        .filter(|p| p.len() == SEAL_HEX)
        .ok_or(Unsealed::Malformed("no prev"))?
        .to_string();
    Ok(Sealed {
        seq,
        prev,
        seal: seal.to_string(),
    })
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// The head file's text for `head`: `<seq> <seal> <mac> <chain>` (the mac under the key, so
/// the file cannot be rewound by hand to an earlier line without the key; `chain` the seal of
/// the chain's first line, which names the chain's anchors), newline-ended, of a fixed length
/// (20-digit seq) so that it is overwritten in place. Without a chain (a log continued from
/// an earlier version's head), the three first parts.
pub fn head_text(key: &[u8; 32], head: &Head, chain: Option<&str>) -> String {
    let seq = format!("{:020}", head.seq);
    match chain {
        Some(chain) => {
            let m = mac(
                key,
                &[
                    b"head ",
                    seq.as_bytes(),
                    b" ",
                    head.seal.as_bytes(),
                    b" chain ",
                    chain.as_bytes(),
                ],
            );
            format!("{seq} {} {m} {chain}\n", head.seal)
        }
        None => {
            let m = mac(key, &[b"head ", seq.as_bytes(), b" ", head.seal.as_bytes()]);
            format!("{seq} {} {m}\n", head.seal)
        }
    }
}

/// Reads a head file's text, checked under `key`.
pub fn read_head(key: &[u8; 32], text: &str) -> Option<Head> {
    read_head_and_chain(key, text).map(|(head, _)| head)
}

/// Reads a head file's text, checked under `key`: the head, and the chain it names (the seal
/// of the chain's first line) when it names one.
pub fn read_head_and_chain(key: &[u8; 32], text: &str) -> Option<(Head, Option<String>)> {
    let parts: Vec<&str> = text.split_whitespace().collect();
    let (seq, seal, m, chain) = match parts[..] {
        [seq, seal, m] => (seq, seal, m, None),
        [seq, seal, m, chain] if is_seal(chain) => (seq, seal, m, Some(chain)),
        _ => return None,
    };
    let head = Head {
        seq: seq.parse().ok()?,
        seal: seal.to_string(),
    };
    (is_seal(seal) && head_text(key, &head, chain).split_whitespace().nth(2) == Some(m))
        .then(|| (head, chain.map(str::to_string)))
}

/// Whether `text` is a seal: 64 lower-case hex digits.
pub fn is_seal(text: &str) -> bool {
    text.len() == SEAL_HEX
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: [u8; 32] = [7; 32];

    #[test]
    fn a_sealed_line_reads_back_and_any_change_breaks_its_seal() {
        let mut head = Head::start();
        let first = seal(
            &KEY,
            &mut head,
            br#"{"tool":"report_loans","outcome":"ok"}"#,
        );
        let second = seal(&KEY, &mut head, br#"{"tool":"x"}"#);
        let a = open(&KEY, first.strip_suffix(b"\n").unwrap()).unwrap();
        let b = open(&KEY, second.strip_suffix(b"\n").unwrap()).unwrap();
        assert_eq!((a.seq, a.prev.as_str()), (1, GENESIS));
        assert_eq!((b.seq, b.prev), (2, a.seal.clone()));
        assert_eq!(
            head,
            Head {
                seq: 2,
                seal: b.seal
            }
        );
        let text = String::from_utf8(first.clone()).unwrap();
        assert!(text.starts_with(r#"{"tool":"report_loans","outcome":"ok","seq":1,"prev":"000"#));
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["outcome"], "ok");
        // One byte changed, or the same line sealed under another key.
        let edited = text.replace("\"ok\"", "\"no\"");
        assert_eq!(
            open(&KEY, edited.trim_end().as_bytes()),
            Err(Unsealed::Forged)
        );
        assert_eq!(
            open(&[8; 32], text.trim_end().as_bytes()),
            Err(Unsealed::Forged)
        );
        assert!(matches!(
            open(&KEY, br#"{"tool":"x"}"#),
            Err(Unsealed::Malformed(_))
        ));
    }

    #[test]
    fn a_head_file_reads_back_only_as_written_under_the_key() {
        let head = Head {
            seq: 41,
            seal: "ab".repeat(32),
        };
        let text = head_text(&KEY, &head, None);
        assert_eq!(text.len(), 20 + 1 + 64 + 1 + 64 + 1);
        assert_eq!(read_head(&KEY, &text), Some(head.clone()));
        let rewound = text.replacen("00000000000000000041", "00000000000000000040", 1);
        assert_eq!(read_head(&KEY, &rewound), None);
        assert_eq!(read_head(&[1; 32], &text), None);
        // With its chain: the chain is sealed with the head.
        let chain = "cd".repeat(32);
        let text = head_text(&KEY, &head, Some(&chain));
        assert_eq!(text.len(), 20 + 1 + 64 + 1 + 64 + 1 + 64 + 1);
        assert_eq!(
            read_head_and_chain(&KEY, &text),
            Some((head, Some(chain.clone())))
        );
        let other = text.replace(&chain, &"ce".repeat(32));
        assert_eq!(read_head_and_chain(&KEY, &other), None);
    }
}
