#!/usr/bin/env bash
# Builds every crate of the plugins/ workspace to a WebAssembly component. Every tool
# (plugins/tools/<tool>) is written as <tool>.wasm + <tool>.toml into the build folder
# (plugins/build/); the shipped tools (plugins/tools/SHIPPED) are also installed into the
# plugin directory (plugins/dist/, the one `make run` serves). A new tool is built, not
# deployed: check it, run it, sign it, then copy it into the plugin directory (docs/plugins.md).
# Test fixtures (plugins/fixtures/*) stay in the target directory, printed on the last line.
# With LOANHOST_BUILD_EXAMPLES=1, the plugins written in other languages (plugins/examples/
# <language>/<tool>) are built too, into BUILD_DIR/examples/<language>/ (the tests do this; it
# installs the pinned Python and TypeScript toolchains on first use), and the hostile plugins of
# the sandbox and attack tests (plugins/hostile/<language>/hostile) into BUILD_DIR/hostile/.
#
# Usage: scripts/build-plugins.sh [DIST_DIR [BUILD_DIR]]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dist=${1:-$root/plugins/dist}
build=${2:-$(dirname "$dist")/build}
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
mkdir -p "$dist" "$build"
# Through a temporary name and a rename, so that a running host's reloader never reads a
# half-written file.
install() { cp "$1" "$2/.$(basename "$1").tmp" && mv -f "$2/.$(basename "$1").tmp" "$2/$(basename "$1")"; }
for dir in "$root"/plugins/tools/*/; do
    tool=$(basename "$dir")
    [ -f "$out/$tool.wasm" ] || { echo "build-plugins: $tool.wasm was not built" >&2; exit 1; }
    cp "$out/$tool.wasm" "$build/$tool.wasm"
    cp "$dir/$tool.toml" "$build/$tool.toml"
    # Its MCP Apps view, when it has one (plugins/tools/<tool>/view/main.ts).
    if [ -d "$dir/view" ]; then
        "$root/scripts/build-view.sh" "$dir" "$build" >/dev/null
    else
        rm -f "$build/$tool.html"
    fi
done
while read -r tool; do
    [ -z "$tool" ] || [ "${tool#\#}" != "$tool" ] && continue
    install "$build/$tool.wasm" "$dist"
    # The view before the manifest that declares it (a watching server reads whole plugins).
    if [ -f "$build/$tool.html" ]; then install "$build/$tool.html" "$dist"; else rm -f "$dist/$tool.html"; fi
    install "$build/$tool.toml" "$dist"
done < "$root/plugins/tools/SHIPPED"
if [ "${LOANHOST_BUILD_EXAMPLES:-}" = 1 ]; then
    # The ported reports, and the hostile plugins of the sandbox and attack tests.
    for dir in "$root"/plugins/examples/*/*/ "$root"/plugins/hostile/*/*/; do
        language=$(basename "$(dirname "$dir")")
        kind=$(basename "$(dirname "$(dirname "$dir")")")
        "$root/scripts/build-plugin.sh" "$dir" "$build/$kind/$language" >/dev/null
    done
fi
echo "$out"
