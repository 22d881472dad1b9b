//! `wrk` as the load generator, from outside: a process of its own on loopback, as a user's
//! load tool (or a customer's harness) calls a server, with none of its cost in the bench's
//! process. `docs/benchmarks.md` quotes the `hot_path` ratio measured this way.

use std::path::Path;
use std::process::Command;

use super::cpu_seconds_of;

/// What one `wrk` run (or several, [`Outside::add`]) measured of one server.
#[derive(Clone, Copy, Default)]
pub struct Outside {
    /// Calls answered.
    pub calls: f64,
    /// Seconds `wrk` measured for.
    pub seconds: f64,
    /// The server process's CPU seconds over them.
    pub cpu_seconds: f64,
}

impl Outside {
    /// Calls answered per second.
    pub fn per_second(&self) -> f64 {
        self.calls / self.seconds
    }

    /// The server process's CPU time per call, in microseconds.
    pub fn server_cpu_us_per_call(&self) -> f64 {
        self.cpu_seconds * 1e6 / self.calls
    }

    /// This and `other` as one measure: the calls, seconds and CPU time of both (runs of one
    /// server in turn with others' come to its rates over its own seconds).
    pub fn add(self, other: Outside) -> Outside {
        Outside {
            calls: self.calls + other.calls,
            seconds: self.seconds + other.seconds,
            cpu_seconds: self.cpu_seconds + other.cpu_seconds,
        }
    }
}

/// Whether `wrk` is on the `PATH` (`scripts/setup.sh` installs it).
pub fn available() -> bool {
    Command::new("wrk")
        .arg("--version")
        .output()
        .is_ok_and(|o| !o.stdout.is_empty() || !o.stderr.is_empty())
}

/// Writes, in `dir`, the Lua script that has `wrk` send an authenticated `tools/call` of
/// `tool` (no arguments), the bearer tokens taken in turn; returns its path.
pub fn script(dir: &Path, tool: &str, tokens: &[String]) -> std::path::PathBuf {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": {}}})
    .to_string();
    let tokens: Vec<String> = tokens.iter().map(|t| format!("{t:?}")).collect();
    let lua = format!(
        "local tokens = {{{}}}\nlocal body = {:?}\nlocal n = 0\n\
         request = function()\n  n = n + 1\n  return wrk.format(\"POST\", nil, \
         {{[\"Content-Type\"] = \"application/json\", [\"Authorization\"] = \"Bearer \" .. \
         tokens[n % #tokens + 1]}}, body)\nend\n",
        tokens.join(", "),
        body
    );
    let path = dir.join("call.lua");
    std::fs::write(&path, lua).unwrap();
    path
}

/// Runs `wrk` (one thread, `connections` connections, `seconds`) with `script` against
/// `url`, reading `server`'s CPU time before and after. Panics when any call was not a success:
/// a figure of refused calls measures nothing.
pub fn run(url: &str, script: &Path, connections: usize, seconds: u64, server: u32) -> Outside {
    let cpu = || cpu_seconds_of(&server.to_string());
    let before = cpu();
    let out = Command::new("wrk")
        .args([
            "-t1",
            &format!("-c{connections}"),
            &format!("-d{seconds}s"),
            "-s",
        ])
        .arg(script)
        .arg(url)
        .output()
        .expect("running wrk");
    let used = cpu() - before;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "wrk: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !text.contains("Non-2xx") && !text.contains("Socket errors"),
        "wrk saw failed calls: {text}"
    );
    let number = |label: &str, at: usize| -> f64 {
        text.lines()
            .find(|l| l.contains(label))
            .and_then(|l| l.split_whitespace().nth(at))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {label:?} in wrk's output: {text}"))
    };
    let calls = number("requests in", 0);
    Outside {
        calls,
        // What `wrk` divides by (its own measure of the run's length).
        seconds: calls / number("Requests/sec:", 1),
        cpu_seconds: used,
    }
}
