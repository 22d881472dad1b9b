//! `loanhost audit verify FILE…`: checks audit logs' chain under the host's audit key, and
//! against its anchors in PostgreSQL when asked, and prints what holds, or the first place it
//! breaks (exit 1).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use loanhost::audit::verify::{chain_of, verify_anchored, Anchors, Verified};
use loanhost::data::audit_anchors::AnchorStore;
use loanhost::data::Db;

/// Verifies `files` (oldest first) under the key in `key_file`, which must exist; with
/// `anchors`, against the chain's anchors in that PostgreSQL database.
pub async fn verify_logs(
    key_file: &Path,
    anchors: Option<&str>,
    files: &[PathBuf],
) -> anyhow::Result<ExitCode> {
    let bytes = std::fs::read(key_file).map_err(|e| {
        anyhow::anyhow!(
            "cannot read the audit key {}: {e} (the host's LOANHOST_AUDIT_KEY_FILE; pass --key)",
            key_file.display()
        )
    })?;
    let key = <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| {
        anyhow::anyhow!(
            "{}: an audit key is 32 bytes, this file has {}",
            key_file.display(),
            bytes.len()
        )
    })?;
    let anchored = match anchors {
        None => None,
        Some(url) => Some(read_anchors(url, &key, files).await?),
    };
    match verify_anchored(&key, files, anchored.as_ref().unwrap_or(&Anchors::new())) {
        Ok(Verified {
            lines,
            first_seq,
            last,
            head_checked,
            anchors_checked,
        }) => {
            let anchors = match &anchored {
                None => String::new(),
                Some(all) => format!(
                    "; {anchors_checked} of its {} anchor{} in PostgreSQL checked, none past its end",
                    all.len(),
                    if all.len() == 1 { "" } else { "s" }
                ),
            };
            println!(
                "ok: {lines} line{} (seq {first_seq}..{}) in {} file{}, one unbroken chain{}{anchors}",
                if lines == 1 { "" } else { "s" },
                last.seq,
                files.len(),
                if files.len() == 1 { "" } else { "s" },
                if head_checked {
                    ", ending where the log's head says"
                } else {
                    " (no head beside the last file: lines removed from its end go unseen)"
                }
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(broken) => {
            println!("broken: {broken}");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// The anchors of the chain `files` belong to, from the PostgreSQL database at `url`.
async fn read_anchors(url: &str, key: &[u8; 32], files: &[PathBuf]) -> anyhow::Result<Anchors> {
    let chain = chain_of(key, files).ok_or_else(|| {
        anyhow::anyhow!(
            "cannot tell which chain these files are: no head beside the last file names it, \
             and the first file does not start a chain (give the log's first part too)"
        )
    })?;
    let db = Db::open_reports(url).await?;
    let store = AnchorStore::of(&db)
        .ok_or_else(|| anyhow::anyhow!("--anchors: anchors are kept in PostgreSQL only"))?;
    Ok(store.read(&chain).await?)
}
