//! Commands a test runs to the end.

/// Runs `command`; its standard output, or a panic with what it printed.
pub fn run(command: &mut std::process::Command) -> String {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{command:?}:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}
