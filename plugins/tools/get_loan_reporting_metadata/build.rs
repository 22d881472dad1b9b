//! Writes the tool's answer once, when it is built: the vocabulary record ([`vocabulary::record`])
//! as JSON text, into `OUT_DIR/answer.json`, which the tool includes. The record is the same
//! for every call; writing it in every call was most of the tool's run time.

/// The platform's vocabulary, the same file the SDK and the host compile.
#[path = "../../sdk/src/vocab.rs"]
#[allow(dead_code)]
mod vocab;
#[path = "src/vocabulary.rs"]
mod vocabulary;

fn main() {
    println!("cargo::rerun-if-changed=src/vocabulary.rs");
    println!("cargo::rerun-if-changed=../../sdk/src/vocab.rs");
    let text = serde_json::to_string(&vocabulary::record()).expect("the record is plain JSON");
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("answer.json"), text).expect("OUT_DIR is writable");
}
