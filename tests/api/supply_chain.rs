//! The plugin toolchains install only what their lock files pin, checked by hash, and run no
//! package's install script (`docs/threat-model.md`, "Supply chain").

use serde_json::Value;

use crate::helpers::root;

/// The lines of the shell script at `path` (from the root) that are not comments, trimmed.
fn commands(path: &str) -> Vec<String> {
    std::fs::read_to_string(root().join(path))
        .unwrap()
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// The requirements of the pip file at `path`, one a line (continuations joined), each checked
/// to pin a version with its hash.
fn hashed_requirements(path: &str) -> Vec<String> {
    let text = std::fs::read_to_string(root().join(path)).unwrap();
    let joined = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
        .replace("\\\n", " ");
    let pinned: Vec<String> = joined
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    for requirement in &pinned {
        assert!(requirement.contains("=="), "not pinned: {requirement}");
        assert!(
            requirement.contains("--hash=sha256:"),
            "no hash: {requirement}"
        );
    }
    pinned
}

/// The `pip install` lines of `commands`, each checked to insist on hashes and wheels.
fn checked_pip(commands: &[String]) -> usize {
    let pip: Vec<&String> = commands
        .iter()
        .filter(|l| l.contains("pip\" install"))
        .collect();
    for l in &pip {
        assert!(
            l.contains("--require-hashes") && l.contains("--only-binary :all:"),
            "{l}"
        );
    }
    pip.len()
}

#[test]
fn the_plugin_toolchains_install_only_hash_checked_artifacts_and_run_no_install_scripts() {
    // Arrange
    let commands = commands("scripts/plugin-toolchain.sh");

    // Assert: Python: every requirement pinned, with its hash; pip is told to insist on them
    // and on wheels.
    assert!(checked_pip(&commands) > 0);
    let pinned = hashed_requirements("plugins/toolchain/requirements.txt").len();
    assert!(pinned >= 6, "{pinned} requirements");
    // npm: every install from a lock file, without install scripts; no system packages.
    let npm: Vec<&String> = commands
        .iter()
        .filter(|l| l.contains("npm ci ") && !l.starts_with("log "))
        .collect();
    assert_eq!(npm.len(), 2);
    for l in npm {
        assert!(l.contains("--ignore-scripts"), "{l}");
    }
    assert!(
        !commands.iter().any(|l| l.contains("apt-get")),
        "installs system packages"
    );
    for lock in [
        "plugins/toolchain/package-lock.json",
        "plugins/views/package-lock.json",
    ] {
        let lock: Value =
            serde_json::from_str(&std::fs::read_to_string(root().join(lock)).unwrap()).unwrap();
        for (name, package) in lock["packages"].as_object().unwrap() {
            if package.get("resolved").is_some() {
                assert!(
                    package["integrity"]
                        .as_str()
                        .is_some_and(|i| i.starts_with("sha512-")),
                    "{name} has no integrity hash"
                );
            }
        }
    }
}

#[test]
fn the_test_peers_install_only_hash_checked_artifacts_and_only_named_install_scripts() {
    // Arrange
    let commands = commands("scripts/setup.sh");
    let pinned = hashed_requirements("tests/clients/requirements.txt");

    // Assert: pip insists on hashes and wheels, and every requirement has one.
    assert_eq!(checked_pip(&commands), 1);
    for named in ["mcp==", "jsonschema==", "skillsaw==", "podman-compose=="] {
        assert!(pinned.iter().any(|r| r.starts_with(named)), "{named}");
    }
    // npm: from the lock file without scripts, then only the named packages' scripts.
    let npm: Vec<&String> = commands.iter().filter(|l| l.contains("npm ci ")).collect();
    assert_eq!(npm.len(), 1);
    assert!(npm[0].contains("--ignore-scripts"), "{}", npm[0]);
    let rebuild: Vec<&String> = commands
        .iter()
        .filter(|l| l.contains("npm rebuild"))
        .collect();
    assert_eq!(rebuild.len(), 1);
    assert!(
        rebuild[0].contains("node esbuild @modelcontextprotocol/inspector"),
        "{}",
        rebuild[0]
    );
}
