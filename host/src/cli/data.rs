//! `loanhost import` and `loanhost seed`: the import files read into the configured
//! database in one transaction, and a synthetic data set written (and imported, with
//! `--import`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use loanhost::config::Config;
use loanhost::data::import::ImportReport;

/// Imports the JSON Lines files of `dir`, each file's rows counted as it goes.
pub async fn import(config: &Config, dir: &Path) -> anyhow::Result<ExitCode> {
    let db = loanhost::data::Db::open(&config.database_url).await?;
    let started = std::time::Instant::now();
    print_imported(&import_showing_progress(&db, dir).await?);
    eprintln!(
        "import committed in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

/// Writes `loans` loans of `seed` into `out` (or a scratch folder, removed once imported).
pub async fn seed(
    config: &Config,
    loans: u64,
    seed: u64,
    out: Option<PathBuf>,
    import: bool,
) -> anyhow::Result<ExitCode> {
    let today = config
        .today
        .unwrap_or_else(|| loanhost::clock::Clock::system().today());
    let spec = loanhost::data::seed::SeedSpec { loans, seed, today };
    let dir = match &out {
        Some(d) => d.clone(),
        None => config
            .cache_dir
            .join(format!("seed-{}", std::process::id())),
    };
    let counts = tokio::task::spawn_blocking({
        let dir = dir.clone();
        move || loanhost::data::seed::write_dir(spec, &dir)
    })
    .await??;
    eprintln!(
        "seeded {} agents, {} loans, {} LOS history rows, {} warehouse milestones, {} deals, {} licences, {} rate sheet rows, {} loan applications (seed {seed}, today {today})",
        counts.agents, counts.loans, counts.history, counts.milestones, counts.deals, counts.licenses, counts.rates, counts.applications
    );
    if import {
        let db = loanhost::data::Db::open(&config.database_url).await?;
        let result = import_showing_progress(&db, &dir).await;
        let _ = std::fs::remove_dir_all(&dir);
        print_imported(&result?);
    } else {
        println!("wrote {}", dir.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Imports `dir` into `db` in one transaction, each file's rows counted on stderr as it goes.
async fn import_showing_progress(
    db: &loanhost::data::Db,
    dir: &Path,
) -> anyhow::Result<ImportReport> {
    Ok(loanhost::data::import::import_dir(db, dir, |file, rows| {
        eprintln!("  {file}: {rows} rows");
    })
    .await?)
}

/// The rows imported, file by file.
fn print_imported(report: &ImportReport) {
    for (file, rows) in &report.files {
        println!("{file}: {rows} rows imported");
    }
}
