//! `loanhost audit verify FILE…`: reads audit logs in the order given (a rotated log's parts,
//! oldest first, as one chain) and names the first line removed, changed, inserted or moved,
//! or the lines removed from the end when the live log's head (`<log>.head`) names a later
//! line than the log holds. Imports nothing of ours.

use std::collections::BTreeMap;
use std::io::BufRead as _;
use std::path::{Path, PathBuf};

use super::chain::{self, Head, GENESIS};

/// A chain that holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// Sealed lines read.
    pub lines: u64,
    /// The first line's `seq` (1 unless the first file is a later part of a rotated log).
    pub first_seq: u64,
    /// The last line.
    pub last: Head,
    /// Whether the head beside the last file was checked.
    pub head_checked: bool,
    /// Anchors checked against the lines they name.
    pub anchors_checked: usize,
}

/// A chain's anchors, kept outside its log: per `seq`, the seal the line had and when it was
/// anchored.
pub type Anchors = BTreeMap<u64, (String, String)>;

/// Where and how the chain breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {what}", file.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct Broken {
    /// The file.
    pub file: PathBuf,
    /// The line (1-based), when the break is at one.
    pub line: Option<u64>,
    /// What is wrong.
    pub what: String,
}

/// Where the head of the log at `path` is kept.
pub fn head_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".head");
    PathBuf::from(name)
}

/// The chain the log at `path` starts, when its first line is a chain's first: that line's
/// seal (the name its anchors are kept under).
pub fn first_chain(key: &[u8; 32], path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut first = Vec::new();
    std::io::BufReader::new(file)
        .read_until(b'\n', &mut first)
        .ok()?;
    let first = first.strip_suffix(b"\n").unwrap_or(&first);
    chain::open(key, first)
        .ok()
        .filter(|s| s.seq == 1)
        .map(|s| s.seal)
}

/// The chain `files` belong to: the one the head beside the last file names, else the one the
/// first file starts.
pub fn chain_of(key: &[u8; 32], files: &[PathBuf]) -> Option<String> {
    files
        .last()
        .and_then(|f| std::fs::read_to_string(head_path(f)).ok())
        .and_then(|text| chain::read_head_and_chain(key, &text))
        .and_then(|(_, chain)| chain)
        .or_else(|| files.first().and_then(|f| first_chain(key, f)))
}

/// Verifies `files`, in order, as one chain under `key`.
pub fn verify(key: &[u8; 32], files: &[PathBuf]) -> Result<Verified, Broken> {
    verify_anchored(key, files, &Anchors::new())
}

/// Verifies `files`, in order, as one chain under `key`, and against the chain's `anchors`:
/// each line anchored must be the one anchored (a chain rewritten by whoever holds the key
/// differs there), and no line anchored may be missing from the end (a log cut, or rewound
/// with its head to an earlier state, ends before it).
pub fn verify_anchored(
    key: &[u8; 32],
    files: &[PathBuf],
    anchors: &Anchors,
) -> Result<Verified, Broken> {
    let mut anchors_checked = 0;
    let mut last: Option<Head> = None;
    let mut first_seq = 0;
    let mut lines = 0;
    for file in files {
        let broken = |line: Option<u64>, what: String| Broken {
            file: file.clone(),
            line,
            what,
        };
        let reader = std::fs::File::open(file)
            .map(std::io::BufReader::new)
            .map_err(|e| broken(None, format!("cannot read it: {e}")))?;
        for (i, line) in reader.split(b'\n').enumerate() {
            let at = Some(i as u64 + 1);
            let line = line.map_err(|e| broken(at, format!("cannot read it: {e}")))?;
            if line.is_empty() {
                return Err(broken(
                    at,
                    "an empty line (a line was cut or inserted)".into(),
                ));
            }
            let s = chain::open(key, &line).map_err(|e| broken(at, e.to_string()))?;
            if let Some((seal, when)) = anchors.get(&s.seq) {
                if *seal != s.seal {
                    return Err(broken(
                        at,
                        format!(
                            "seq {} is not the line anchored at {when}: the chain was written \
                             again from here (by whoever holds the audit key)",
                            s.seq
                        ),
                    ));
                }
                anchors_checked += 1;
            }
            match &last {
                None if s.seq == 1 && s.prev != GENESIS => {
                    return Err(broken(at, "the first line names a line before it".into()))
                }
                None => first_seq = s.seq,
                Some(prev) if s.seq == 1 && s.prev == GENESIS => {
                    return Err(broken(
                        at,
                        format!(
                            "a new chain starts here after seq {}: the host lost its chain's \
                             head, or the lines after this chain's last were removed",
                            prev.seq
                        ),
                    ))
                }
                Some(prev) if s.seq == prev.seq + 1 && s.prev == prev.seal => {}
                Some(prev) if s.seq == prev.seq + 1 => {
                    return Err(broken(
                        at,
                        format!(
                            "the line before this one is not the one it was sealed after \
                             (seq {} was replaced)",
                            prev.seq
                        ),
                    ))
                }
                Some(prev) if s.seq > prev.seq + 1 => {
                    let gone = s.seq - prev.seq - 1;
                    return Err(broken(
                        at,
                        format!(
                            "seq {} follows seq {}: {} removed or moved from here",
                            s.seq,
                            prev.seq,
                            if gone == 1 {
                                format!("seq {} was", prev.seq + 1)
                            } else {
                                format!("seq {}..{} were", prev.seq + 1, s.seq - 1)
                            }
                        ),
                    ));
                }
                Some(prev) => {
                    return Err(broken(
                        at,
                        format!(
                            "seq {} follows seq {}: this line was inserted or moved here",
                            s.seq, prev.seq
                        ),
                    ))
                }
            }
            lines += 1;
            last = Some(Head {
                seq: s.seq,
                seal: s.seal,
            });
        }
    }
    let Some(last) = last else {
        let file = files.last().cloned().unwrap_or_default();
        return Err(Broken {
            file,
            line: None,
            what: "no audit line to verify".into(),
        });
    };
    let head_checked = match files.last().map(|f| head_path(f)) {
        Some(head) if head.exists() => {
            check_head(key, &head, &last)?;
            true
        }
        _ => false,
    };
    if let Some((seq, (_, when))) = anchors.range(last.seq + 1..).next_back() {
        let gone = seq - last.seq;
        return Err(Broken {
            file: files.last().cloned().unwrap_or_default(),
            line: None,
            what: format!(
                "the log ends at seq {}, but seq {seq} was anchored at {when}: at least {gone} \
                 line{} removed from its end (or the log and its head were rewound)",
                last.seq,
                if gone == 1 { " was" } else { "s were" }
            ),
        });
    }
    Ok(Verified {
        lines,
        first_seq,
        last,
        head_checked,
        anchors_checked,
    })
}

/// The live log's head against its last line: the host writes the head after each line, so
/// a head at most the last line (one behind after a crash between the two) holds.
fn check_head(key: &[u8; 32], path: &Path, last: &Head) -> Result<(), Broken> {
    let broken = |what: String| Broken {
        file: path.to_path_buf(),
        line: None,
        what,
    };
    let text = std::fs::read_to_string(path).map_err(|e| broken(format!("cannot read it: {e}")))?;
    let head = chain::read_head(key, &text)
        .ok_or_else(|| broken("the chain's head is not sealed by this key (edited)".into()))?;
    if head.seq > last.seq {
        let gone = head.seq - last.seq;
        return Err(broken(format!(
            "the head names seq {}, the log ends at seq {}: the last {gone} line{} removed",
            head.seq,
            last.seq,
            if gone == 1 { " was" } else { "s were" }
        )));
    }
    if head.seq == last.seq && head.seal != last.seal {
        return Err(broken(format!(
            "the log's last line (seq {}) is not the one the head names",
            last.seq
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: [u8; 32] = [9; 32];

    /// A log of `n` sealed lines in `dir`, its lines, and its head written beside it.
    fn log(dir: &Path, n: u64) -> (PathBuf, Vec<Vec<u8>>) {
        let mut head = Head::start();
        let lines: Vec<Vec<u8>> = (1..=n)
            .map(|i| chain::seal(&KEY, &mut head, format!(r#"{{"call":{i}}}"#).as_bytes()))
            .collect();
        let path = dir.join("audit.jsonl");
        std::fs::write(&path, lines.concat()).unwrap();
        let chain = lines.first().map(|l| {
            chain::open(&KEY, l.strip_suffix(b"\n").unwrap())
                .unwrap()
                .seal
        });
        std::fs::write(
            head_path(&path),
            chain::head_text(&KEY, &head, chain.as_deref()),
        )
        .unwrap();
        (path, lines)
    }

    fn broken_at(path: &Path, lines: &[Vec<u8>]) -> Broken {
        std::fs::write(path, lines.concat()).unwrap();
        verify(&KEY, &[path.to_path_buf()]).unwrap_err()
    }

    #[test]
    fn an_intact_log_verifies_with_its_head() {
        let dir = tempfile::tempdir().unwrap();
        let (path, _) = log(dir.path(), 5);
        let v = verify(&KEY, &[path]).unwrap();
        assert_eq!(
            (v.lines, v.first_seq, v.last.seq, v.head_checked),
            (5, 1, 5, true)
        );
    }

    #[test]
    fn every_kind_of_edit_is_named_at_its_line() {
        // Arrange
        let dir = tempfile::tempdir().unwrap();
        let (path, lines) = log(dir.path(), 5);
        let mut changed = lines.clone();
        changed[2] = String::from_utf8(changed[2].clone())
            .unwrap()
            .replace("\"call\":3", "\"call\":4")
            .into_bytes();
        let mut removed = lines.clone();
        removed.remove(2);
        let mut moved = lines.clone();
        moved.swap(1, 2);
        let mut resealed = lines.clone();
        let mut other = Head {
            seq: 2,
            seal: "ab".repeat(32),
        };
        resealed[2] = chain::seal(&KEY, &mut other, br#"{"call":3}"#);

        // Act / Assert
        let at = |b: Broken| (b.line, b.what);
        let (line, what) = at(broken_at(&path, &changed));
        assert_eq!(line, Some(3));
        assert!(what.contains("seal does not match"), "{what}");
        let (line, what) = at(broken_at(&path, &removed));
        assert_eq!(line, Some(3));
        assert!(
            what.contains("seq 4 follows seq 2: seq 3 was removed"),
            "{what}"
        );
        let (line, what) = at(broken_at(&path, &moved));
        assert_eq!(line, Some(2));
        assert!(
            what.contains("seq 3 follows seq 1: seq 2 was removed"),
            "{what}"
        );
        let (line, what) = at(broken_at(&path, &resealed));
        assert_eq!(line, Some(3));
        assert!(what.contains("(seq 2 was replaced)"), "{what}");
    }

    #[test]
    fn lines_cut_from_the_end_are_named_by_the_head() {
        let dir = tempfile::tempdir().unwrap();
        let (path, lines) = log(dir.path(), 5);
        let b = broken_at(&path, &lines[..3]);
        assert_eq!(b.file, head_path(&path));
        assert!(
            b.what.contains(
                "the head names seq 5, the log ends at seq 3: the last 2 lines were removed"
            ),
            "{}",
            b.what
        );
        // One behind the head (a crash between the line and its head) holds.
        std::fs::write(&path, lines[..5].concat()).unwrap();
        let mut head = Head::start();
        for i in 1..=4u64 {
            chain::seal(&KEY, &mut head, format!(r#"{{"call":{i}}}"#).as_bytes());
        }
        std::fs::write(head_path(&path), chain::head_text(&KEY, &head, None)).unwrap();
        assert_eq!(verify(&KEY, &[path]).unwrap().last.seq, 5);
    }

    /// Anchors of `lines` at these seqs.
    fn anchored(lines: &[Vec<u8>], seqs: &[u64]) -> Anchors {
        seqs.iter()
            .map(|seq| {
                let line = &lines[*seq as usize - 1];
                let seal = chain::open(&KEY, line.strip_suffix(b"\n").unwrap())
                    .unwrap()
                    .seal;
                (*seq, (seal, format!("t{seq}")))
            })
            .collect()
    }

    #[test]
    fn anchors_name_a_log_rewound_with_its_head_and_a_chain_written_again() {
        // Arrange: a log of 6 lines anchored at seq 2 and 5.
        let dir = tempfile::tempdir().unwrap();
        let (path, lines) = log(dir.path(), 6);
        let anchors = anchored(&lines, &[2, 5]);
        let chain = chain_of(&KEY, std::slice::from_ref(&path));

        // Act: whole; rewound to 4 lines with a head of 4 (consistent without the anchors);
        // rewritten by a key holder from seq 5 on.
        let whole = verify_anchored(&KEY, std::slice::from_ref(&path), &anchors).unwrap();
        let mut head = Head::start();
        for i in 1..=4u64 {
            chain::seal(&KEY, &mut head, format!(r#"{{"call":{i}}}"#).as_bytes());
        }
        std::fs::write(&path, lines[..4].concat()).unwrap();
        std::fs::write(
            head_path(&path),
            chain::head_text(&KEY, &head, chain.as_deref()),
        )
        .unwrap();
        let rewound_without = verify(&KEY, std::slice::from_ref(&path));
        let rewound = verify_anchored(&KEY, std::slice::from_ref(&path), &anchors).unwrap_err();
        let mut rewritten = lines[..4].to_vec();
        for i in 5..=6u64 {
            rewritten.push(chain::seal(
                &KEY,
                &mut head,
                format!(r#"{{"call":{}}}"#, i * 10).as_bytes(),
            ));
        }
        std::fs::write(&path, rewritten.concat()).unwrap();
        std::fs::write(
            head_path(&path),
            chain::head_text(&KEY, &head, chain.as_deref()),
        )
        .unwrap();
        let written_again =
            verify_anchored(&KEY, std::slice::from_ref(&path), &anchors).unwrap_err();

        // Assert
        assert_eq!(chain, first_chain(&KEY, &path));
        assert_eq!(whole.anchors_checked, 2);
        assert!(
            rewound_without.is_ok(),
            "a rewind is invisible without anchors"
        );
        assert!(
            rewound.what.contains(
                "the log ends at seq 4, but seq 5 was anchored at t5: at least 1 line was removed"
            ),
            "{}",
            rewound.what
        );
        assert_eq!(written_again.line, Some(5));
        assert!(
            written_again
                .what
                .contains("seq 5 is not the line anchored at t5"),
            "{}",
            written_again.what
        );
    }
}
