//! The bare reference of `host/benches/hot_path.rs`, built apart from loanhost: the handler of
//! `handler.rs` with the system allocator. Run by the benchmark with [`handler::SPEC`] set.

mod handler;

fn main() {
    let Ok(spec) = std::env::var(handler::SPEC) else {
        eprintln!(
            "loanhost-bare: set {} (listen address, JWKS file, answer file, issuer, audience; \
             one a line); host/benches/hot_path.rs runs it",
            handler::SPEC
        );
        std::process::exit(2);
    };
    handler::serve(&spec);
}
