//! The plugins a test deploys: the shipped tools, the fixtures, the example and hostile
//! plugins, built once per run into the run's own folder, and their manifests.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where the built plugins are: shipped tools (`<tool>.wasm` + `<tool>.toml`) and fixtures.
pub struct Built {
    /// The installed shipped tools.
    pub dist: PathBuf,
    /// The cargo output directory holding `fixture_*.wasm`.
    pub out: PathBuf,
    /// The build folder: `examples/<language>/<tool>.wasm` (plugins/examples) and
    /// `hostile/<language>/hostile_<language>.wasm` (plugins/hostile).
    pub build: PathBuf,
}

/// The run's own folder `kind` in the temporary directory (`loanhost-test-<kind>-<pid>`: the
/// built plugins, the compiled components' cache). The first call removes those of earlier
/// runs whose process has ended, a few hundred MB each, which nothing else would.
pub(super) fn run_dir(kind: &str) -> PathBuf {
    static SWEPT: OnceLock<()> = OnceLock::new();
    let tmp = std::env::temp_dir();
    SWEPT.get_or_init(|| sweep_ended_runs(&tmp));
    tmp.join(format!("loanhost-test-{kind}-{}", std::process::id()))
}

/// Removes `loanhost-test-*-<pid>` folders whose process no longer runs. Only where `/proc`
/// says which processes run (Linux); elsewhere nothing is removed.
fn sweep_ended_runs(tmp: &Path) {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("loanhost-test-")) else {
            continue;
        };
        let Some((_, pid)) = rest.rsplit_once('-') else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !proc.join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Builds every plugin and fixture once per test run (the same script `make plugins` uses).
pub fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let root = loanhost_tests::root();
        let dist = run_dir("dist");
        let build = run_dir("build");
        let output = std::process::Command::new(root.join("scripts/build-plugins.sh"))
            .arg(&dist)
            .arg(&build)
            .env("LOANHOST_BUILD_EXAMPLES", "1")
            .stderr(std::process::Stdio::inherit())
            .output()
            .expect("running scripts/build-plugins.sh");
        assert!(output.status.success(), "building the plugins failed");
        let out = String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .last()
            .unwrap()
            .trim()
            .to_string();
        Built {
            dist,
            build,
            out: PathBuf::from(out),
        }
    })
}

/// The bytes of fixture `name` (e.g. `misbehave` for `fixture_misbehave.wasm`).
pub fn fixture_wasm(name: &str) -> Vec<u8> {
    let file = built()
        .out
        .join(format!("fixture_{}.wasm", name.replace('-', "_")));
    std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// The bytes of shipped tool `name`.
pub fn tool_wasm(name: &str) -> Vec<u8> {
    std::fs::read(built().dist.join(format!("{name}.wasm"))).unwrap()
}

/// The bytes and manifest of the example plugin `name` written in `language` (`python`,
/// `typescript`: plugins/examples/<language>/<name>).
pub fn example_plugin(language: &str, name: &str) -> (Vec<u8>, String) {
    let dir = built().build.join("examples").join(language);
    let read = |ext: &str| {
        let file = dir.join(format!("{name}.{ext}"));
        std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
    };
    (read("wasm"), String::from_utf8(read("toml")).unwrap())
}

/// The bytes of the hostile plugin written in `language` (plugins/hostile/<language>/
/// hostile_<language>, tool `hostile_<language>`).
pub fn hostile_plugin(language: &str) -> Vec<u8> {
    let file = built()
        .build
        .join("hostile")
        .join(language)
        .join(format!("hostile_{language}.wasm"));
    std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// The shipped view (`<name>.html`) of tool `name`, if it has one.
pub fn tool_view(name: &str) -> Option<Vec<u8>> {
    std::fs::read(built().dist.join(format!("{name}.html"))).ok()
}

/// The shipped manifest of tool `name`.
pub fn tool_manifest(name: &str) -> String {
    std::fs::read_to_string(built().dist.join(format!("{name}.toml"))).unwrap()
}

/// A manifest for a fixture: each dataset with every field and a listing grant (fixtures read
/// whatever a test asks of them; the tests of grants write their own).
pub fn manifest(
    name: &str,
    roles: &[&str],
    datasets: &[&str],
    memory_mib: u32,
    timeout_ms: u64,
    max_output: u64,
) -> String {
    let list = |xs: &[&str]| {
        xs.iter()
            .map(|x| format!("\"{x}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let grants = if datasets.is_empty() {
        "datasets = []\n".to_string()
    } else {
        String::new()
    } + "scope = \"caller\"\n\n"
        + &every_field_listed(datasets);
    format!(
        "name = \"{name}\"\nwit_version = \"1.2.0\"\nroles = [{}]\n{grants}[limits]\nmemory_mib = {memory_mib}\ntimeout_ms = {timeout_ms}\nmax_output_bytes = {max_output}\n",
        list(roles),
    )
}

/// `[datasets.<d>]` tables granting every field of each dataset, with a listing grant.
pub fn every_field_listed(datasets: &[&str]) -> String {
    datasets
        .iter()
        .map(|d| {
            let dataset = loanhost::data::catalog::Dataset::parse(d)
                .unwrap_or_else(|| panic!("no dataset `{d}`"));
            let fields = dataset
                .field_names()
                .iter()
                .map(|f| format!("\"{f}\""))
                .collect::<Vec<_>>()
                .join(", ");
            format!("[datasets.{d}]\nfields = [{fields}]\nlisting = true\n\n")
        })
        .collect()
}

/// `manifest` (of a component built with an SDK, `loan:reporting@1.2.0`) for a component built
/// against `loan:reporting@{version}` (the fixtures of the earlier versions).
pub fn on_wit(manifest: String, version: &str) -> String {
    manifest.replace(
        "wit_version = \"1.2.0\"",
        &format!("wit_version = \"{version}\""),
    )
}

/// The six shipped tools.
pub const ALL_TOOLS: [&str; 6] = [
    "get_loan_reporting_metadata",
    "report_loans",
    "loan_pipeline_report",
    "report_loan_milestones",
    "warehouse_loan_milestone_report",
    "mlo_pipeline_report",
];

#[test]
fn a_run_sweeps_the_folders_of_ended_runs_and_keeps_the_running_ones() {
    // Arrange: folders of this process, of a process that cannot run (pid beyond Linux's
    // limit of 2^22), and a name that is not a run's.
    if !Path::new("/proc/self").exists() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let me = std::process::id();
    let mine = tmp.path().join(format!("loanhost-test-dist-{me}"));
    let ended = tmp.path().join("loanhost-test-compiled-4294967295");
    let other = tmp.path().join("loanhost-test-notes");
    for dir in [&mine, &ended, &other] {
        std::fs::create_dir_all(dir.join("cache")).unwrap();
    }

    // Act
    sweep_ended_runs(tmp.path());

    // Assert
    assert!(mine.exists());
    assert!(!ended.exists());
    assert!(other.exists());
}
