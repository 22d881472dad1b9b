//! Helpers shared by the host's binary-level tests (`plugin_guide`, `telemetry`).

use std::time::Duration;

/// A free loopback port (the server is told to bind it).
pub fn free_port() -> u16 {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    probe.local_addr().unwrap().port()
}

/// Waits (bounded: 20 s) until `GET {base}/health` answers `200`; panics otherwise.
/// (`/ready` would wait for a loaded tool, which these servers may not have yet.)
pub async fn wait_until_up(base: &str) {
    let client = reqwest::Client::new();
    for _ in 0..400 {
        if client
            .get(format!("{base}/health"))
            .send()
            .await
            .is_ok_and(|r| r.status() == 200)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the server at {base} did not start");
}
