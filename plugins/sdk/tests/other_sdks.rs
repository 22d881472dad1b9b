//! The Python and TypeScript SDKs carry the platform's vocabulary and the spec's filter schema
//! as source (a component has no files to read them from at run time). This test keeps those
//! files equal to the Rust SDK's: it fails when they differ, and `LOANHOST_BLESS=1` rewrites
//! them.

use std::path::PathBuf;

use loanhost_guest::schema::loan_filter;
use loanhost_guest::vocab::{LOAN_STATUSES, LOAN_TYPES, PURPOSES};

fn plugins_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn list(values: &[&str]) -> String {
    let items: Vec<String> = values
        .iter()
        .map(|v| format!("    {},", serde_json::to_string(v).unwrap()))
        .collect();
    items.join("\n")
}

fn python() -> String {
    let schema = serde_json::to_string_pretty(&loan_filter()).unwrap();
    format!(
        "\"\"\"The platform's fixed vocabulary and the spec's `filter` schema, as the Rust SDK has them.\n\
         Generated: plugins/sdk/tests/other_sdks.rs keeps this file equal to the Rust SDK\n\
         (`LOANHOST_BLESS=1 cargo test -p loanhost-guest --test other_sdks` rewrites it).\"\"\"\n\n\
         import json\n\n\
         #: The 45 loan statuses, in the spec's order.\n\
         LOAN_STATUSES = (\n{}\n)\n\n\
         #: The loan types.\n\
         LOAN_TYPES = (\n{}\n)\n\n\
         #: The loan purposes.\n\
         PURPOSES = (\n{}\n)\n\n\
         #: The JSON Schema of the spec's `filter` argument (the snapshot-backed reports).\n\
         LOAN_FILTER_SCHEMA = json.loads(\n    r\"\"\"\n{schema}\n\"\"\"\n)\n",
        list(&LOAN_STATUSES),
        list(&LOAN_TYPES),
        list(&PURPOSES),
    )
}

fn typescript() -> String {
    let schema = serde_json::to_string_pretty(&loan_filter()).unwrap();
    format!(
        "// The platform's fixed vocabulary and the spec's `filter` schema, as the Rust SDK has them.\n\
         // Generated: plugins/sdk/tests/other_sdks.rs keeps this file equal to the Rust SDK\n\
         // (`LOANHOST_BLESS=1 cargo test -p loanhost-guest --test other_sdks` rewrites it).\n\n\
         /** The 45 loan statuses, in the spec's order. */\n\
         export const LOAN_STATUSES = [\n{}\n] as const;\n\n\
         /** The loan types. */\n\
         export const LOAN_TYPES = [\n{}\n] as const;\n\n\
         /** The loan purposes. */\n\
         export const PURPOSES = [\n{}\n] as const;\n\n\
         /** The JSON Schema of the spec's `filter` argument (the snapshot-backed reports). */\n\
         export const LOAN_FILTER_SCHEMA: Record<string, unknown> = {schema};\n",
        list(&LOAN_STATUSES),
        list(&LOAN_TYPES),
        list(&PURPOSES),
    )
}

fn check(path: PathBuf, want: String) {
    if std::env::var_os("LOANHOST_BLESS").is_some() {
        std::fs::write(&path, want).unwrap();
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{} differs from the Rust SDK's vocabulary; run `LOANHOST_BLESS=1 cargo test -p \
         loanhost-guest --test other_sdks` in plugins/",
        path.display()
    );
}

#[test]
fn the_python_sdk_has_the_rust_sdks_vocabulary() {
    check(
        plugins_dir().join("sdk-python/loanhost_plugin/vocabulary.py"),
        python(),
    );
}

#[test]
fn the_typescript_sdk_has_the_rust_sdks_vocabulary() {
    check(plugins_dir().join("sdk-ts/src/vocabulary.ts"), typescript());
}
