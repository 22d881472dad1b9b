//! `loanhost plugin new`: a plugin and its manifest that build and pass `plugin check` at once,
//! with a unit test that passes. In Rust, either in the project's `plugins/tools/` (a member of
//! the guest workspace, whose lock file is brought up to date) or anywhere else (a crate of its
//! own that finds the guest SDK and the WIT by path); in Python or TypeScript, a folder that
//! `scripts/build-plugin.sh` builds and `scripts/test-plugin.sh` tests with the SDK of the
//! checkout.

use std::path::{Path, PathBuf};

mod python;
mod rust;
mod typescript;

/// The language a plugin is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lang {
    /// A crate built for wasm32-unknown-unknown with the guest SDK (`plugins/sdk`).
    #[default]
    Rust,
    /// A module built with componentize-py and the Python SDK (`plugins/sdk-python`).
    Python,
    /// A module built with esbuild and componentize-js with the TypeScript SDK (`plugins/sdk-ts`).
    TypeScript,
}

impl Lang {
    /// `rust`, `python` or `typescript` (also `ts`, `py`).
    pub fn parse(text: &str) -> Result<Lang, String> {
        match text {
            "rust" | "rs" => Ok(Lang::Rust),
            "python" | "py" => Ok(Lang::Python),
            "typescript" | "ts" => Ok(Lang::TypeScript),
            other => Err(format!(
                "`{other}` is not a plugin language: rust, python or typescript"
            )),
        }
    }

    /// The SDK folder of this language in a loanhost checkout at `root`.
    pub fn sdk_in(self, root: &Path) -> PathBuf {
        root.join(match self {
            Lang::Rust => "plugins/sdk",
            Lang::Python => "plugins/sdk-python",
            Lang::TypeScript => "plugins/sdk-ts",
        })
    }
}

/// Where a new plugin goes and what it builds against.
pub struct Scaffold<'a> {
    /// The tool name (= crate name = manifest stem), `snake_case`.
    pub name: &'a str,
    /// The folder to create `<name>/` in.
    pub dir: &'a Path,
    /// The SDK of the language (`plugins/sdk`, `plugins/sdk-python`, `plugins/sdk-ts` of a
    /// loanhost checkout).
    pub sdk: &'a Path,
    /// The language.
    pub lang: Lang,
    /// Whether the plugin ships an MCP Apps view (`view/main.ts`, declared in the manifest).
    pub view: bool,
}

/// Whether `name` is a valid tool name: `[a-z][a-z0-9_]*`, at most 64 characters.
pub fn valid_name(name: &str) -> bool {
    loanhost::references::is_tool_name(name) && name.len() <= 64
}

impl Scaffold<'_> {
    /// Writes `<dir>/<name>/` (Cargo.toml, src/lib.rs, `<name>.toml`; with `view`, its view
    /// too); refuses to overwrite. Returns the crate folder and whether it joined the
    /// project's guest workspace.
    pub fn write(&self) -> Result<(PathBuf, bool), String> {
        let (krate, in_workspace) = self.write_plugin()?;
        if self.view {
            write_view(&krate, self.name)?;
        }
        Ok((krate, in_workspace))
    }

    fn write_plugin(&self) -> Result<(PathBuf, bool), String> {
        let name = self.name;
        if !valid_name(name) {
            return Err(format!(
                "`{name}` is not a tool name: lower-case letters, digits and `_`, starting with a letter, at most 64"
            ));
        }
        let krate = self.dir.join(name);
        if krate.exists() {
            return Err(format!("{} already exists", krate.display()));
        }
        match self.lang {
            Lang::Rust => {}
            Lang::Python => return python::write(&krate, name).map(|()| (krate, false)),
            Lang::TypeScript => {
                return typescript::write(&krate, name, self.sdk).map(|()| (krate, false))
            }
        }
        let in_workspace = self.in_guest_workspace();
        let cargo = if in_workspace {
            format!(
                "[package]\nname = \"{name}\"\ndescription = \"TODO: what {name} answers\"\nversion.workspace = true\nedition.workspace = true\nlicense.workspace = true\n\n[lib]\ncrate-type = [\"cdylib\"]\n\n[dependencies]\nloanhost-guest.workspace = true\nserde.workspace = true\nserde_json.workspace = true\n"
            )
        } else {
            let sdk = self
                .sdk
                .canonicalize()
                .map_err(|e| format!("the guest SDK at {}: {e}", self.sdk.display()))?;
            format!(
                "[package]\nname = \"{name}\"\ndescription = \"TODO: what {name} answers\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[lib]\ncrate-type = [\"cdylib\"]\n\n[dependencies]\nloanhost-guest = {{ path = \"{}\" }}\nserde = {{ version = \"1.0\", features = [\"derive\"] }}\nserde_json = {{ version = \"1.0\", features = [\"arbitrary_precision\"] }}\n\n# A crate of its own, not a member of any enclosing workspace.\n[workspace]\n\n[profile.release]\nopt-level = 3\nlto = true\ncodegen-units = 1\npanic = \"abort\"\nstrip = true\n",
                sdk.display()
            )
        };
        write_file(krate.join("Cargo.toml"), cargo)?;
        write_file(krate.join("src/lib.rs"), rust::lib_rs(name))?;
        write_file(
            krate.join(format!("{name}.toml")),
            manifest(name, WIT_VERSION, 32, ""),
        )?;
        write_fixtures(&krate)?;
        Ok((krate, in_workspace))
    }

    /// `dir` is the `tools/` folder of a guest workspace (`members` has `"tools/*"`).
    fn in_guest_workspace(&self) -> bool {
        self.dir.file_name().and_then(|n| n.to_str()) == Some("tools")
            && self
                .dir
                .parent()
                .map(|p| p.join("Cargo.toml"))
                .and_then(|p| std::fs::read_to_string(p).ok())
                .is_some_and(|t| t.contains("[workspace]") && t.contains("\"tools/*\""))
    }
}

/// Two agents; the test signs in as Ada.
const FIXTURE_AGENTS: &str = concat!(
    r#"{"id": "a0000000-0000-4000-8000-000000000001", "email": "ada@example.com", "firstName": "Ada", "lastName": "Agent", "roles": ["Agent"], "managedAgentIds": []}"#,
    "\n",
    r#"{"id": "b0000000-0000-4000-8000-000000000002", "email": "bo@example.com", "firstName": "Bo", "lastName": "Other", "roles": ["Agent"], "managedAgentIds": []}"#,
    "\n",
);

/// Three of Ada's loans and one of Bo's (which Ada's calls must not count).
const FIXTURE_LOANS: &str = concat!(
    r#"{"id": "10000000-0000-4000-8000-000000000001", "status": "Loan Open", "loanType": "Conventional", "purpose": "Purchase", "statusDate": "2026-10-02T15:00:00Z", "loanAmount": 250000, "loanOfficerId": "a0000000-0000-4000-8000-000000000001"}"#,
    "\n",
    r#"{"id": "10000000-0000-4000-8000-000000000002", "status": "Loan Open", "loanType": "FHA", "purpose": "Purchase", "statusDate": "2026-10-20T15:00:00Z", "loanAmount": 410000, "loanOfficerId": "a0000000-0000-4000-8000-000000000001"}"#,
    "\n",
    r#"{"id": "10000000-0000-4000-8000-000000000003", "status": "Loan Funded", "loanType": "Conventional", "purpose": "Refinance Cashout", "statusDate": "2026-11-03T15:00:00Z", "loanAmount": 99000, "loanOfficerId": "a0000000-0000-4000-8000-000000000001"}"#,
    "\n",
    r#"{"id": "10000000-0000-4000-8000-000000000004", "status": "Loan Funded", "loanType": "VA", "purpose": "Purchase", "statusDate": "2026-11-12T15:00:00Z", "loanAmount": 120000, "loanOfficerId": "b0000000-0000-4000-8000-000000000002"}"#,
    "\n",
);

/// Writes `path`, naming it in the error.
fn write_file(path: PathBuf, text: impl AsRef<[u8]>) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// `tests/fixtures/`: the import files `plugin run --data` reads (Ada's loans and Bo's).
fn write_fixtures(dir: &Path) -> Result<(), String> {
    let fixtures = dir.join("tests/fixtures");
    write_file(fixtures.join("agents.jsonl"), FIXTURE_AGENTS)?;
    write_file(fixtures.join("loans.jsonl"), FIXTURE_LOANS)
}

/// The view of every scaffold (they all answer `{buckets: [{status, count}]}`): bars per
/// status, and the figures in a table.
const VIEW: &str = r#"// The MCP Apps view of {name}: how a client that renders views shows its results.
// `scripts/build-view.sh` (run by scripts/build-plugin.sh) bundles it with the views library
// (plugins/views: the extension's SDK and Observable Plot) into {name}.html, one
// self-contained file beside the component; `loanhost plugin run … --view out.html` shows it
// with a result. See docs/plugins.md, "Views".
import { bars, startView, table } from "@loanhost/views";

interface Result {
  buckets: Array<{ status: string; count: number }>;
}

startView<Result>({
  title: "{title}",
  isEmpty: (r) => r.buckets.length === 0,
  render: (r, ctx) => [
    bars(ctx, "Loans per status", r.buckets.map((b) => ({ key: b.status, value: b.count })), "Loans"),
    table("Figures", ["Status", "Loans"], r.buckets.map((b) => [b.status, b.count])),
  ],
});
"#;

/// Writes the scaffold's view and declares it in the manifest.
fn write_view(dir: &Path, name: &str) -> Result<(), String> {
    let title = name.replace('_', " ");
    write_file(
        dir.join("view/main.ts"),
        VIEW.replace("{name}", name).replace("{title}", &title),
    )?;
    let manifest = dir.join(format!("{name}.toml"));
    let text =
        std::fs::read_to_string(&manifest).map_err(|e| format!("{}: {e}", manifest.display()))?;
    write_file(
        manifest,
        format!(
            "{text}\n# The MCP Apps view shipped beside the component ({name}.html, built from view/main.ts).\n[view]\ntitle = \"{title} (chart)\"\nprefers_border = true\n"
        ),
    )
}

/// The version of `loan:reporting` every SDK (`plugins/sdk`, `sdk-python`, `sdk-ts`) builds
/// against.
pub(super) const WIT_VERSION: &str = "1.2.0";

/// The manifest of a new plugin with `memory_mib` of memory; `limits` adds lines to its
/// `[limits]`, built against `loan:reporting@{wit_version}`.
fn manifest(name: &str, wit_version: &str, memory_mib: u32, limits: &str) -> String {
    format!(
        "# Manifest of the {name} plugin (written by the operator, not the plugin).\nname = \"{name}\"\nwit_version = \"{wit_version}\"\nroles = [\"Admin\", \"Processor\", \"DualLicensedAgent\", \"ConciergeKey\", \"Agent\"]\nscope = \"caller\"\n\n# The fields it reads (the host refuses any other).\n[datasets.loans]\nfields = [\"status\"]\n\n[limits]\nmemory_mib = {memory_mib}\ntimeout_ms = 5000\nmax_output_bytes = 262144\n{limits}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_overwrites_are_checked() {
        assert!(valid_name("my_report2"));
        assert!(!valid_name("My-report") && !valid_name("2x") && !valid_name(""));
        let dir = tempfile::tempdir().unwrap();
        let s = Scaffold {
            name: "my_report",
            dir: dir.path(),
            sdk: dir.path(),
            lang: Lang::Rust,
            view: true,
        };
        let (krate, in_ws) = s.write().unwrap();
        assert!(!in_ws);
        assert!(krate.join("my_report.toml").exists() && krate.join("src/lib.rs").exists());
        assert!(krate.join("view/main.ts").exists());
        let manifest = loanhost::plugins::Manifest::load(&krate.join("my_report.toml")).unwrap();
        assert_eq!(
            manifest.view.unwrap().title.as_deref(),
            Some("my report (chart)")
        );
        assert!(s.write().unwrap_err().ends_with("already exists"));
    }

    #[test]
    fn each_language_writes_its_plugin_manifest_and_test() {
        let dir = tempfile::tempdir().unwrap();
        for (lang, files) in [
            (Lang::Python, ["plugin.py", "tests/test_plugin.py"]),
            (Lang::TypeScript, ["src/plugin.ts", "test/plugin.test.ts"]),
        ] {
            let name = format!("r_{lang:?}").to_lowercase();
            let (folder, in_ws) = Scaffold {
                name: &name,
                dir: dir.path(),
                sdk: dir.path(),
                lang,
                view: false,
            }
            .write()
            .unwrap();
            assert!(!in_ws);
            for f in files.iter().chain(&["tests/fixtures/loans.jsonl"]) {
                assert!(folder.join(f).is_file(), "{lang:?}: {f}");
            }
            let m = std::fs::read_to_string(folder.join(format!("{name}.toml"))).unwrap();
            assert!(
                loanhost::plugins::Manifest::parse(&m, Some(&name)).is_ok(),
                "{m}"
            );
        }
        assert_eq!(Lang::parse("ts"), Ok(Lang::TypeScript));
        assert!(Lang::parse("go")
            .unwrap_err()
            .contains("rust, python or typescript"));
    }
}
