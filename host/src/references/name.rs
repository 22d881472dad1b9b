//! An OCI reference's text (`oci://registry/repository[:tag][@sha256:…]`) and whether a
//! registry's `host:port` is this machine.

pub use oci_client::Reference;

/// Text that is not an OCI reference like `oci://registry.example.com/team/report_loans:1.0`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not an OCI reference like oci://registry.example.com/team/report_loans:1.0")]
pub struct NotAReference(pub String);

/// Parses `oci://registry/repository[:tag][@sha256:…]`. A reference without a tag or digest is
/// refused rather than read as `:latest`: what a host serves is named, not implied.
pub fn parse_reference(text: &str) -> Result<Reference, NotAReference> {
    let bad = || NotAReference(text.to_string());
    let rest = text.strip_prefix("oci://").ok_or_else(bad)?;
    if rest.is_empty() || !rest.contains('/') || rest.chars().any(char::is_whitespace) {
        return Err(bad());
    }
    let last = rest.rsplit('/').next().unwrap_or("");
    if !last.contains(':') && !last.contains('@') {
        return Err(bad());
    }
    let reference: Reference = rest.parse().map_err(|_| bad())?;
    if reference.registry() != rest.split('/').next().unwrap_or("") {
        // The parser would have put it on Docker Hub: the registry must be named.
        return Err(bad());
    }
    Ok(reference)
}

/// Whether `host_port` (`127.0.0.1:5000`, `localhost:5000`, `[::1]:5000`) names this machine.
pub fn is_loopback(host_port: &str) -> bool {
    let host = match host_port.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host_port.split(':').next().unwrap_or(""),
    };
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}
