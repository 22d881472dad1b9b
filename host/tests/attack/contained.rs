//! What an attack must leave: every hostile plugin's outcome contained, the server's memory
//! settled after the phase, and the outcomes summed up.

use std::collections::BTreeMap;

/// The attacks whose host must be back within [`SETTLED_MIB`] of the resident memory it had
/// when they began once they end (what they made the host hold is given back, not kept). Each
/// is measured against its own start, not the baseline: what an earlier attack left with the
/// allocator (the nested arguments' bodies) is not this attack's.
pub(super) const SETTLES: &[&str] = &[
    "batched view reads",
    "table hoard",
    "compile bomb",
    "hostile registry",
];

/// How far above its resident memory at the start the host may stay after a settling attack.
pub(super) const SETTLED_MIB: u64 = 64;

/// "429 ×1,234; 200 timeout: ×8" — the attacker's outcomes, most frequent first.
pub(super) fn summary(outcomes: &BTreeMap<String, usize>) -> String {
    let mut v: Vec<(&String, &usize)> = outcomes.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1));
    v.iter()
        .take(4)
        .map(|(o, n)| format!("{o} ×{n}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// An attack and the hostile plugin that makes it: the Rust fixture (`misbehave`), or its
/// twin written in another language (`spin (Python)` is `spin` by `hostile_python`).
pub(super) fn hostile_of(name: &str) -> (&str, &'static str) {
    if let Some(attack) = name.strip_suffix(" (Python)") {
        (attack, "hostile_python")
    } else if let Some(attack) = name.strip_suffix(" (TypeScript)") {
        (attack, "hostile_typescript")
    } else {
        (name, "misbehave")
    }
}

/// What the attacker must never get: for each attack, outcomes that would mean a defence
/// failed.
pub(super) fn assert_contained(name: &str, outcomes: &BTreeMap<String, usize>) {
    let total: usize = outcomes.values().sum();
    assert!(total > 0, "{name}: the attack sent nothing");
    let got = |o: &str| outcomes.keys().any(|k| k.contains(o));
    match hostile_of(name).0 {
        "query flood" => assert!(!got("200 ok"), "{name}: the flood finished: {outcomes:?}"),
        "huge labels" => assert!(
            outcomes
                .keys()
                .all(|k| k.contains("invalid_params:") || k.starts_with("429")),
            "{name}: {outcomes:?}"
        ),
        "spin" | "memory bomb" | "log flood" => assert!(!got("200 ok"), "{name}: {outcomes:?}"),
        // Results up to the manifest's cap are allowed; nothing larger gets through.
        // (An interpreter building a 4 MiB string among 8 such loops may also run out of time.)
        "output bomb" => assert!(
            outcomes.keys().all(|k| k.starts_with("429")
                || k.starts_with("200 ok (")
                || k.contains("internal:")
                || k.contains("timeout:")),
            "{name}: {outcomes:?}"
        ),
        "searchText bomb" => assert!(
            outcomes
                .keys()
                .all(|k| k.contains("invalid_params:") || k.starts_with("429")),
            "{name}: {outcomes:?}"
        ),
        // The 1,000-call batches get the cap's 400, or (once the same token is in the penalty
        // box) a 429; never an answer.
        "batch flood" => assert!(
            !got("batch of 1000") && (got("400 rpc -32600") || got("429")),
            "{name}: {outcomes:?}"
        ),
        "slow headers" => assert!(got("closed by the server"), "{name}: {outcomes:?}"),
        "many memories" => assert!(got("not loaded") && !got("LISTED"), "{name}: {outcomes:?}"),
        "oversized bodies" => assert!(
            outcomes.keys().all(|k| k.starts_with("HTTP/1.1 401")
                || k.starts_with("HTTP/1.1 413")
                || k.starts_with("HTTP/1.1 503")
                || k == "closed"),
            "{name}: {outcomes:?}"
        ),
        "token flood" => assert!(
            outcomes
                .keys()
                .all(|k| k.starts_with("401") || k.starts_with("503")),
            "{name}: {outcomes:?}"
        ),
        // Trickled bodies are cut at their deadline (408) or refused at once (429: too many
        // from this address, or from this token); none is ever served.
        "slow bodies /token" | "slow bodies REST token" | "slow bodies /mcp" => assert!(
            got("HTTP/1.1 429")
                && outcomes.keys().all(|k| k.starts_with("HTTP/1.1 429")
                    || k.starts_with("HTTP/1.1 408")
                    || k == "held until the end"
                    || k == "closed"),
            "{name}: {outcomes:?}"
        ),
        "nested arguments" => assert!(
            !got("200 ok") && (got("rpc -32602") || got("invalid_params:")),
            "{name}: {outcomes:?}"
        ),
        // The caller's result budget runs out (429, or a batch whose entries are all refused),
        // and no batch's reply passes its cap.
        "batched view reads" => assert!(
            got("429")
                && outcomes.keys().all(|k| {
                    k.starts_with("429")
                        || k.ends_with("(rpc -32050)")
                        || k.strip_prefix("200 ok (")
                            .and_then(|r| r.strip_suffix(" KiB)"))
                            .and_then(|kib| kib.parse::<u64>().ok())
                            .is_some_and(|kib| kib <= 8 * 1024)
                }),
            "{name}: {outcomes:?}"
        ),
        // Each call's tables are charged to the host's plugin memory: some calls are refused
        // for it, or for the caller's budget, and the rest answer.
        "table hoard" => assert!(
            got("200 ok")
                && outcomes
                    .keys()
                    .all(|k| k.starts_with("429") || k == "200 ok" || k.contains("internal:")),
            "{name}: {outcomes:?}"
        ),
        "compile bomb" => assert!(got("not loaded") && !got("LISTED"), "{name}: {outcomes:?}"),
        "hostile registry" => assert!(
            got("registry requests")
                && !got("LISTED")
                && !got("READ PAST THE CAP")
                && !got("REMOVED"),
            "{name}: {outcomes:?}"
        ),
        _ => {}
    }
}
