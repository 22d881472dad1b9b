#!/usr/bin/env bash
# Installs (idempotently) what building and testing loanhost needs on a Debian machine:
# the Wasm component toolchain (see scripts/wasm-toolchain.sh) and rustfmt/clippy.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

"$root/scripts/wasm-toolchain.sh" >/dev/null

for component in rustfmt clippy; do
    if ! cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1; then
        timeout 120 rustup component add "$component" >&2 || echo "setup: could not add $component" >&2
    fi
done
