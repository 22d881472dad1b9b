//! `loanhost audit verify FILE…`: checks audit logs' chain under the host's audit key and
//! prints what holds, or the first place it breaks (exit 1).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use loanhost::audit::verify::{verify, Verified};

/// Verifies `files` (oldest first) under the key in `key_file`, which must exist.
pub fn verify_logs(key_file: &Path, files: &[PathBuf]) -> anyhow::Result<ExitCode> {
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
    match verify(&key, files) {
        Ok(Verified {
            lines,
            first_seq,
            last,
            head_checked,
        }) => {
            println!(
                "ok: {lines} line{} (seq {first_seq}..{}) in {} file{}, one unbroken chain{}",
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
