#!/usr/bin/env bash
# Builds ONE plugin crate, wherever it lives (the project's plugins/tools/<tool>, or a plugin
# team's own repository made with `loanhost plugin new --dir`), to a WebAssembly component,
# and puts <tool>.wasm and <tool>.toml into OUT_DIR (default: <crate>/dist).
#
# Usage: scripts/build-plugin.sh CRATE_DIR [OUT_DIR]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
crate=$(cd "${1:?usage: scripts/build-plugin.sh CRATE_DIR [OUT_DIR]}" && pwd)
out_dir=${2:-$crate/dist}
tool=$(basename "$crate")
[ -f "$crate/Cargo.toml" ] || { echo "build-plugin: $crate/Cargo.toml is missing" >&2; exit 1; }
[ -f "$crate/$tool.toml" ] || { echo "build-plugin: the manifest $crate/$tool.toml is missing" >&2; exit 1; }
cache=${XDG_CACHE_HOME:-$HOME/.cache}/loanhost
target=${PLUGIN_TARGET_DIR:-$cache/plugins-target}

eval "$("$root/scripts/wasm-toolchain.sh")"
build_std=()
[ -n "$PLUGIN_BUILD_STD" ] && build_std=("$PLUGIN_BUILD_STD")

(
    cd "$crate"
    RUSTC="$PLUGIN_RUSTC" RUSTC_BOOTSTRAP=1 RUSTFLAGS="$PLUGIN_RUSTFLAGS" CARGO_TARGET_DIR="$target" \
        "$PLUGIN_CARGO" build --release --target wasm32-unknown-unknown "${build_std[@]}" -p "$tool" >&2
)
mkdir -p "$out_dir"
cp "$target/wasm32-unknown-unknown/release/$tool.wasm" "$out_dir/$tool.wasm"
cp "$crate/$tool.toml" "$out_dir/$tool.toml"
echo "$out_dir/$tool.wasm"
