#!/usr/bin/env bash
# Runs ONE plugin's own unit tests with its language's runner, without a server:
#   Rust        cargo test (the crate's tests; loanhost_guest::testing calls the built component)
#   Python      pytest on <plugin>/tests, with plugins/sdk-python importable (FakeHost)
#   TypeScript  tsc (type check), then node's test runner on <plugin>/test/*.test.ts
#               (transpiled by esbuild; @loanhost/plugin is plugins/sdk-ts)
# The pinned toolchains come from plugins/toolchain/ (scripts/plugin-toolchain.sh).
#
# Usage: scripts/test-plugin.sh PLUGIN_DIR
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(cd "${1:?usage: scripts/test-plugin.sh PLUGIN_DIR}" && pwd)

if [ -f "$dir/Cargo.toml" ]; then
    (cd "$dir" && cargo test)
elif [ -f "$dir/plugin.py" ]; then
    eval "$("$root/scripts/plugin-toolchain.sh" python)"
    (cd "$dir" && PYTHONPATH="$root/plugins/sdk-python${PYTHONPATH:+:$PYTHONPATH}" \
        PYTHONDONTWRITEBYTECODE=1 "$PLUGIN_PY" -m pytest -q -p no:cacheprovider tests)
elif [ -f "$dir/src/plugin.ts" ]; then
    eval "$("$root/scripts/plugin-toolchain.sh" typescript)"
    [ -f "$dir/tsconfig.json" ] && "$PLUGIN_NODE_BIN/tsc" -p "$dir/tsconfig.json"
    (cd "$dir" && LOANHOST_TOOLCHAIN="$root/plugins/toolchain" \
        node --import "$root/plugins/sdk-ts/register.mjs" --test test/*.test.ts)
else
    echo "test-plugin: $dir has no Cargo.toml (Rust), plugin.py (Python) or src/plugin.ts (TypeScript)" >&2
    exit 1
fi
