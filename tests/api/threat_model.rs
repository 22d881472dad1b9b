//! `docs/threat-model.md` against the code: every row of its tables with a "shown by" column
//! names a test, and every test it names exists (a unit test, an integration test, or a phase
//! of the attack suite).

use std::path::{Path, PathBuf};

use crate::helpers::root;

/// Every Rust file under `dir`, skipping build output and dependencies.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name();
        if p.is_dir()
            && !matches!(
                name.to_str(),
                Some("node_modules" | "target" | "build" | "dist")
            )
        {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The test functions of the repository: (file, function name).
fn tests() -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    for dir in ["host", "tests", "plugins", "models"] {
        rust_files(&root().join(dir), &mut files);
    }
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            if !(l.contains("#[test]") || l.contains("#[tokio::test")) {
                continue;
            }
            if let Some(name) = lines[i + 1..]
                .iter()
                .take(3)
                .find_map(|l| l.split("fn ").nth(1))
                .and_then(|rest| rest.split(['(', '<']).next())
            {
                out.push((f.clone(), name.trim().to_string()));
            }
        }
    }
    out
}

/// Whether `reference` (`module::…::function`, a function's prefix ending in `…`, or
/// `module::*`) names a test: its function (or, for `*`, its module) exists, in a file whose
/// path holds every module named before it (`tests` aside: unit tests live in the file).
fn exists(reference: &str, tests: &[(PathBuf, String)]) -> bool {
    let segments: Vec<&str> = reference.split("::").collect();
    let (last, modules) = segments.split_last().expect("a reference");
    let in_path = |f: &Path| {
        modules.iter().filter(|m| **m != "tests").all(|m| {
            f.iter().any(|c| {
                c.to_str()
                    .is_some_and(|c| c == *m || c == format!("{m}.rs"))
            })
        })
    };
    tests.iter().any(|(f, name)| {
        in_path(f)
            && match last.strip_suffix('…') {
                _ if *last == "*" => true,
                Some(prefix) => name.starts_with(prefix),
                None => name == last,
            }
    })
}

#[test]
fn every_limit_names_a_test_that_exists() {
    // Arrange
    let doc = std::fs::read_to_string(root().join("docs/threat-model.md")).unwrap();
    let mut attack_files = Vec::new();
    rust_files(&root().join("host/tests/attack"), &mut attack_files);
    let attack: String = attack_files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    let tests = tests();
    let mut problems = Vec::new();
    let mut rows = 0;

    // Act: each table whose header has a "shown by" column, row by row.
    let mut column: Option<usize> = None;
    for line in doc.lines() {
        if !line.starts_with('|') {
            column = None;
            continue;
        }
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        if line.starts_with("|---") {
            continue;
        }
        match column {
            None => {
                column = cells
                    .iter()
                    .position(|c| *c == "shown by")
                    .or(Some(usize::MAX))
            }
            Some(usize::MAX) => {}
            Some(at) => {
                rows += 1;
                let cell = cells.get(at).copied().unwrap_or("");
                let mut named = 0;
                // `attack \`phase\``, then every other backticked name.
                let mut rest = cell;
                while let Some(start) = rest.find('`') {
                    let before = &rest[..start];
                    let after = &rest[start + 1..];
                    let Some(end) = after.find('`') else { break };
                    let name = &after[..end];
                    rest = &after[end + 1..];
                    named += 1;
                    if before.trim_end().ends_with("attack") {
                        if !attack.contains(&format!("\"{name}\"")) {
                            problems.push(format!("no attack phase `{name}` (row: {line})"));
                        }
                    } else if !name.contains("::") || !exists(name, &tests) {
                        problems.push(format!("no test `{name}` (row: {line})"));
                    }
                }
                if named == 0 {
                    problems.push(format!("a row names no test: {line}"));
                }
            }
        }
    }

    // Assert
    assert!(rows > 60, "only {rows} rows with a test column were read");
    assert!(problems.is_empty(), "{problems:#?}");
}
