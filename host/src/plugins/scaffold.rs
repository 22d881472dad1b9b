//! `loanhost plugin new`: a plugin crate and its manifest that build and pass `plugin check`
//! at once, either in the project's `plugins/tools/` (a member of the guest workspace, whose
//! lock file is brought up to date) or anywhere else (a crate of its own that finds the guest
//! SDK and the WIT by path).

use std::path::{Path, PathBuf};

/// Where a new plugin goes and what it builds against.
pub struct Scaffold<'a> {
    /// The tool name (= crate name = manifest stem), `snake_case`.
    pub name: &'a str,
    /// The folder to create `<name>/` in.
    pub dir: &'a Path,
    /// The guest SDK crate (`plugins/sdk` of a loanhost checkout).
    pub sdk: &'a Path,
}

/// Whether `name` is a valid tool name: `[a-z][a-z0-9_]*`, at most 64 characters.
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && name.len() <= 64
}

impl Scaffold<'_> {
    /// Writes `<dir>/<name>/` (Cargo.toml, src/lib.rs, `<name>.toml`); refuses to overwrite.
    /// Returns the crate folder and whether it joined the project's guest workspace.
    pub fn write(&self) -> Result<(PathBuf, bool), String> {
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
                "[package]\nname = \"{name}\"\ndescription = \"TODO: what {name} answers\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[lib]\ncrate-type = [\"cdylib\"]\n\n[dependencies]\nloanhost-guest = {{ path = \"{}\" }}\nserde = {{ version = \"1.0\", features = [\"derive\"] }}\nserde_json = {{ version = \"1.0\", features = [\"arbitrary_precision\"] }}\n\n# A crate of its own, not a member of any enclosing workspace.\n[workspace]\n\n[profile.release]\nopt-level = \"s\"\nlto = true\ncodegen-units = 1\npanic = \"abort\"\nstrip = true\n",
                sdk.display()
            )
        };
        let src = krate.join("src");
        std::fs::create_dir_all(&src).map_err(|e| format!("{}: {e}", src.display()))?;
        let write = |path: PathBuf, text: String| {
            std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
        };
        write(krate.join("Cargo.toml"), cargo)?;
        write(src.join("lib.rs"), lib_rs(name))?;
        write(krate.join(format!("{name}.toml")), manifest(name))?;
        let fixtures = krate.join("tests/fixtures");
        std::fs::create_dir_all(&fixtures).map_err(|e| format!("{}: {e}", fixtures.display()))?;
        write(fixtures.join("agents.jsonl"), FIXTURE_AGENTS.to_string())?;
        write(fixtures.join("loans.jsonl"), FIXTURE_LOANS.to_string())?;
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

fn lib_rs(name: &str) -> String {
    let title = name.replace('_', " ");
    format!(
        r#"//! `{name}`: TODO say what it answers. Counts the caller's loans by current status (only
//! loans the caller's role may see; the host applies the scope).

use loanhost_guest::data::{{self, Aggregate, Key, Query, Value as Cell}};
use loanhost_guest::models::schemars::JsonSchema;
use loanhost_guest::{{parse_arguments, Description, Tool, ToolError}};
use serde::{{Deserialize, Serialize}};
use serde_json::{{json, Value}};

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Args {{
    /// Only these statuses (all when absent or empty).
    #[serde(default)]
    statuses: Vec<String>,
}}

/// The result: its JSON Schema (the tool's `outputSchema`) is generated from this type, so
/// what the tool returns and what it promises cannot drift apart. The doc comments become the
/// schema's descriptions.
#[derive(Serialize, JsonSchema)]
#[schemars(crate = "loanhost_guest::models::schemars")]
#[serde(rename_all = "camelCase")]
struct StatusCounts {{
    /// One entry per current status that has loans.
    buckets: Vec<StatusCount>,
}}

/// Loans at one current status.
#[derive(Serialize, JsonSchema)]
#[schemars(crate = "loanhost_guest::models::schemars")]
struct StatusCount {{
    status: String,
    count: u64,
}}

struct Report;

impl Tool for Report {{
    fn describe() -> Description {{
        Description::new(
            "{name}",
            "{title}",
            "Counts the caller's loans by current status. TODO: say when a model should use it.",
        )
        .input_schema(json!({{
            "type": "object",
            "additionalProperties": false,
            "properties": {{
                "statuses": {{"type": "array", "items": {{"type": "string", "enum": &loanhost_guest::vocab::LOAN_STATUSES[..]}}}}
            }}
        }}))
        .output_record::<StatusCounts>()
    }}

    fn call(arguments: Value) -> Result<Value, ToolError> {{
        let args: Args = parse_arguments(arguments)?;
        let filter = (!args.statuses.is_empty()).then(|| json!({{"statuses": args.statuses}}).to_string());
        let rows = data::run(&Query {{
            dataset: "loans".into(),
            filter,
            predicates: vec![],
            group_by: vec![Key::Field("status".into())],
            distinct_on: None,
            aggregates: vec![Aggregate::Count],
            order_by: vec![],
            limit: None,
        }})?;
        let buckets = rows
            .rows
            .iter()
            .map(|r| {{
                let status = match &r[0] {{
                    Cell::Text(s) => s.clone(),
                    _ => "Unknown".into(),
                }};
                let count = match &r[1] {{
                    Cell::Integer(n) => (*n).max(0) as u64,
                    _ => 0,
                }};
                StatusCount {{ status, count }}
            }})
            .collect();
        loanhost_guest::result(&StatusCounts {{ buckets }})
    }}
}}

loanhost_guest::export_tool!(Report);

/// `cargo test` builds this crate to a component and calls it on `tests/fixtures` the way the
/// server would (needs the `loanhost` binary: `make build` in the loanhost checkout).
#[cfg(test)]
mod tests {{
    use serde_json::json;

    fn call(arguments: serde_json::Value) -> Result<serde_json::Value, String> {{
        loanhost_guest::testing::call_on_fixtures(env!("CARGO_MANIFEST_DIR"), "ada@example.com", "tests/fixtures", arguments)
    }}

    #[test]
    fn counts_only_the_callers_loans_by_status() {{
        let r = call(json!({{}})).unwrap();
        assert_eq!(r["buckets"], json!([{{"status": "Loan Funded", "count": 1}}, {{"status": "Loan Open", "count": 2}}]));
    }}

    #[test]
    fn unknown_arguments_are_refused() {{
        let e = call(json!({{"colour": "red"}})).unwrap_err();
        assert!(e.starts_with("invalid_params: unknown field `colour`"), "{{e}}");
    }}
}}
"#
    )
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
    r#"{"id": "10000000-0000-4000-8000-000000000001", "status": "Loan Open", "loanAmount": 250000, "loanOfficerId": "a0000000-0000-4000-8000-000000000001"}"#,
    "\n",
    r#"{"id": "10000000-0000-4000-8000-000000000002", "status": "Loan Open", "loanAmount": 410000, "loanOfficerId": "a0000000-0000-4000-8000-000000000001"}"#,
    "\n",
    r#"{"id": "10000000-0000-4000-8000-000000000003", "status": "Loan Funded", "loanAmount": 99000, "loanOfficerId": "a0000000-0000-4000-8000-000000000001"}"#,
    "\n",
    r#"{"id": "10000000-0000-4000-8000-000000000004", "status": "Loan Funded", "loanAmount": 120000, "loanOfficerId": "b0000000-0000-4000-8000-000000000002"}"#,
    "\n",
);

fn manifest(name: &str) -> String {
    format!(
        "# Manifest of the {name} plugin (written by the operator, not the plugin).\nname = \"{name}\"\nwit_version = \"1.0.0\"\nroles = [\"Admin\", \"Processor\", \"DualLicensedAgent\", \"ConciergeKey\", \"Agent\"]\ndatasets = [\"loans\"]\nscope = \"caller\"\n\n[limits]\nmemory_mib = 32\ntimeout_ms = 5000\nmax_output_bytes = 262144\n"
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
        };
        let (krate, in_ws) = s.write().unwrap();
        assert!(!in_ws);
        assert!(krate.join("my_report.toml").exists() && krate.join("src/lib.rs").exists());
        assert!(s.write().unwrap_err().ends_with("already exists"));
    }
}
