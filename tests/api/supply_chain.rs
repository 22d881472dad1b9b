//! The plugin toolchains install only what their lock files pin, checked by hash, and run no
//! package's install script (`docs/threat-model.md`, "Supply chain").

use serde_json::Value;

use crate::helpers::root;

#[test]
fn the_plugin_toolchains_install_only_hash_checked_artifacts_and_run_no_install_scripts() {
    // Arrange
    let script = std::fs::read_to_string(root().join("scripts/plugin-toolchain.sh")).unwrap();
    let requirements =
        std::fs::read_to_string(root().join("plugins/toolchain/requirements.txt")).unwrap();
    let commands: Vec<&str> = script
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .collect();

    // Assert: Python: every requirement pinned, with its hash; pip is told to insist on them
    // and on wheels.
    let pip: Vec<&&str> = commands
        .iter()
        .filter(|l| l.contains("pip\" install"))
        .collect();
    assert!(!pip.is_empty());
    for l in pip {
        assert!(
            l.contains("--require-hashes") && l.contains("--only-binary :all:"),
            "{l}"
        );
    }
    let mut pinned = 0;
    let mut entries = requirements
        .split('\n')
        .filter(|l| !l.trim_start().starts_with('#'));
    let text: String = entries
        .by_ref()
        .collect::<Vec<_>>()
        .join("\n")
        .replace("\\\n", " ");
    for requirement in text.lines().filter(|l| !l.trim().is_empty()) {
        assert!(requirement.contains("=="), "not pinned: {requirement}");
        assert!(
            requirement.contains("--hash=sha256:"),
            "no hash: {requirement}"
        );
        pinned += 1;
    }
    assert!(pinned >= 6, "{pinned} requirements");
    // npm: every install from a lock file, without install scripts; no system packages.
    let npm: Vec<&&str> = commands
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
