#!/usr/bin/env bash
# Builds every crate of the plugins/ workspace to a WebAssembly component and installs the
# shipped tools (plugins/tools/<tool>) as <tool>.wasm + <tool>.toml into plugins/dist/.
# Test fixtures (plugins/fixtures/*) stay in the target directory, printed on the last line.
#
# Usage: scripts/build-plugins.sh [DIST_DIR]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dist=${1:-$root/plugins/dist}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/loanhost
target=${PLUGIN_TARGET_DIR:-$cache/plugins-target}

eval "$("$root/scripts/wasm-toolchain.sh")"

build_std=()
[ -n "$PLUGIN_BUILD_STD" ] && build_std=("$PLUGIN_BUILD_STD")

(
    cd "$root/plugins"
    # A crate just added under tools/ (e.g. by `loanhost plugin new`) is not in the lock file
    # yet: record the new workspace member (no dependency moves) before the --locked build.
    if ! "$PLUGIN_CARGO" metadata --locked --format-version 1 >/dev/null 2>&1; then
        echo "build-plugins: recording new workspace members in plugins/Cargo.lock" >&2
        "$PLUGIN_CARGO" update --workspace --offline >&2
    fi
    RUSTC="$PLUGIN_RUSTC" RUSTC_BOOTSTRAP=1 RUSTFLAGS="$PLUGIN_RUSTFLAGS" CARGO_TARGET_DIR="$target" \
        "$PLUGIN_CARGO" build --locked --release --target wasm32-unknown-unknown "${build_std[@]}" --workspace >&2
)

out="$target/wasm32-unknown-unknown/release"
mkdir -p "$dist"
for dir in "$root"/plugins/tools/*/; do
    tool=$(basename "$dir")
    [ -f "$out/$tool.wasm" ] || { echo "build-plugins: $tool.wasm was not built" >&2; exit 1; }
    # Install through a temporary name and a rename, so that a running host's reloader
    # never reads a half-written file.
    cp "$out/$tool.wasm" "$dist/.$tool.wasm.tmp" && mv -f "$dist/.$tool.wasm.tmp" "$dist/$tool.wasm"
    cp "$dir/$tool.toml" "$dist/.$tool.toml.tmp" && mv -f "$dist/.$tool.toml.tmp" "$dist/$tool.toml"
done
echo "$out"
