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

#[test]
fn the_test_peers_install_only_hash_checked_artifacts_and_only_named_install_scripts() {
    // Arrange
    let script = std::fs::read_to_string(root().join("scripts/setup.sh")).unwrap();
    let requirements =
        std::fs::read_to_string(root().join("tests/clients/requirements.txt")).unwrap();
    let commands: Vec<&str> = script
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .collect();

    // Assert: pip insists on hashes and wheels, and every requirement has one.
    let pip: Vec<&&str> = commands
        .iter()
        .filter(|l| l.contains("pip\" install"))
        .collect();
    assert_eq!(pip.len(), 1);
    assert!(pip[0].contains("--require-hashes") && pip[0].contains("--only-binary :all:"));
    let text = requirements
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
        .replace("\\\n", " ");
    let pinned: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    for requirement in &pinned {
        assert!(
            requirement.contains("==") && requirement.contains("--hash=sha256:"),
            "{requirement}"
        );
    }
    for named in ["mcp==", "jsonschema==", "skillsaw==", "podman-compose=="] {
        assert!(pinned.iter().any(|r| r.starts_with(named)), "{named}");
    }
    // npm: from the lock file without scripts, then only the named packages' scripts.
    let npm: Vec<&&str> = commands.iter().filter(|l| l.contains("npm ci ")).collect();
    assert_eq!(npm.len(), 1);
    assert!(npm[0].contains("--ignore-scripts"), "{}", npm[0]);
    let rebuild: Vec<&&str> = commands
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
