//! Loopback ports for the servers and peers a test starts.

/// A loopback port free right now (another process may still take it before it is bound).
pub fn free_port() -> u16 {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    probe.local_addr().unwrap().port()
}
