//! Logging and trace export of the process.

/// Logs to stderr (`RUST_LOG`); with `LOANHOST_OTLP_ENDPOINT` set (an OTLP/HTTP traces URL such
/// as `http://127.0.0.1:4318/v1/traces`), a span of every request (a tool call's names its
/// tool) is exported too. Returns the exporter's provider, to flush at exit.
pub fn init_tracing() -> Option<opentelemetry_sdk::trace::SdkTracerProvider> {
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_otlp::WithExportConfig as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::{EnvFilter, Layer as _};
    let filter = EnvFilter::try_from_env("RUST_LOG")
        .unwrap_or_else(|_| EnvFilter::new("info,tower_http=warn,wasmtime=warn,cranelift=warn"));
    // Colour only on a terminal: a log written to a file holds no escape codes.
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_filter(filter);
    let endpoint = std::env::var("LOANHOST_OTLP_ENDPOINT")
        .ok()
        .filter(|e| !e.trim().is_empty());
    let Some(endpoint) = endpoint else {
        let _ = tracing_subscriber::registry().with(fmt).try_init();
        return None;
    };
    let exporter = match opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(endpoint.trim())
        .build()
    {
        Ok(e) => e,
        Err(e) => {
            eprintln!("LOANHOST_OTLP_ENDPOINT: cannot export to {endpoint}: {e}");
            let _ = tracing_subscriber::registry().with(fmt).try_init();
            return None;
        }
    };
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            opentelemetry_sdk::Resource::builder()
                .with_service_name("loanhost")
                .build(),
        )
        .build();
    let spans = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("loanhost"))
        .with_filter(EnvFilter::new("tower_http=debug,loanhost=info"));
    if tracing_subscriber::registry()
        .with(fmt)
        .with(spans)
        .try_init()
        .is_ok()
    {
        loanhost::mcp::observe::export_spans();
    }
    Some(provider)
}
