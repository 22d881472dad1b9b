#!/usr/bin/env bash
# Builds ONE plugin, wherever it lives (the project's plugins/tools/<tool> or plugins/examples/,
# or a plugin team's own folder made with `loanhost plugin new --dir`), to a WebAssembly
# component, and puts <tool>.wasm and <tool>.toml into OUT_DIR (default: <plugin>/dist).
# The folder's name is the tool's name; its language is told by what it holds:
#   Cargo.toml     Rust: cargo for wasm32-unknown-unknown, linked by wasm-component-ld
#   plugin.py      Python: componentize-py --stub-wasi (no WASI import), with plugins/sdk-python
#   src/plugin.ts  TypeScript: tsc (type check), esbuild (one module), componentize-js
#                  with every WASI feature disabled (no WASI import), with plugins/sdk-ts
# With LOANHOST_SDK_PROFILE=1, a Python or TypeScript build marks its stages (arguments read,
# rows received and decoded, report run) for the profiling host of `make bench`'s `languages`
# (docs/benchmarks.md); a host that does not profile logs those marks as debug lines.
# The Python and TypeScript toolchains are pinned in plugins/toolchain/ and installed there on
# first use (scripts/plugin-toolchain.sh).
#
# Usage: scripts/build-plugin.sh PLUGIN_DIR [OUT_DIR]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
crate=$(cd "${1:?usage: scripts/build-plugin.sh PLUGIN_DIR [OUT_DIR]}" && pwd)
out_dir=${2:-$crate/dist}
tool=$(basename "$crate")
# Every SDK targets loan:reporting@1.2.0 (the Python and TypeScript ones read rows as one JSON
# text, `data.run-json` and `listing.list-page-json`, and return their results as bytes).
wit="$root/wit/loan-reporting@1.2.0"
[ -f "$crate/$tool.toml" ] || { echo "build-plugin: the manifest $crate/$tool.toml is missing" >&2; exit 1; }
mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)
# Written beside its final name and renamed: a server watching OUT_DIR never reads half a file.
tmp_wasm="$out_dir/.$tool.wasm.tmp"
trap 'rm -f "$tmp_wasm"' EXIT

if [ -f "$crate/Cargo.toml" ]; then
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
    cp "$target/wasm32-unknown-unknown/release/$tool.wasm" "$tmp_wasm"
elif [ -f "$crate/plugin.py" ]; then
    eval "$("$root/scripts/plugin-toolchain.sh" python)"
    profile=()
    if [ "${LOANHOST_SDK_PROFILE:-}" = 1 ]; then
        marks=$(mktemp -d)
        trap 'rm -rf "$marks"; rm -f "$tmp_wasm"' EXIT
        echo "ENABLED = True" > "$marks/loanhost_profile.py"
        profile=(-p "$marks")
    fi
    # Imports nothing but loan:reporting: --stub-wasi replaces every WASI import with a stub
    # (no clock, deterministic random, no environment, files or sockets).
    "$(dirname "$PLUGIN_PY")/componentize-py" -d "$wit" -w reporting-tool componentize loanhost_entry \
        -p "$crate" -p "$root/plugins/sdk-python" "${profile[@]}" --stub-wasi -o "$tmp_wasm" >&2
elif [ -f "$crate/src/plugin.ts" ]; then
    eval "$("$root/scripts/plugin-toolchain.sh" typescript)"
    sdk="$root/plugins/sdk-ts"
    [ -f "$crate/tsconfig.json" ] && "$PLUGIN_NODE_BIN/tsc" -p "$crate/tsconfig.json" >&2
    work=$(mktemp -d)
    trap 'rm -rf "$work"; rm -f "$tmp_wasm"' EXIT
    cat > "$work/entry.js" <<ENTRY
// The component's entry: the host's imports bound as the SDK's host, the plugin's default export
// exported as the loan:reporting/tool interface.
import * as caller from "loan:reporting/caller@1.2.0";
import * as clock from "loan:reporting/clock@1.2.0";
import * as log from "loan:reporting/log@1.2.0";
import * as data from "loan:reporting/data@1.2.0";
import * as listing from "loan:reporting/listing@1.2.0";
import * as people from "loan:reporting/people@1.2.0";
import * as licensing from "loan:reporting/licensing@1.2.0";
import * as pricing from "loan:reporting/pricing@1.2.0";
import { bindImports, exportTool, warmUp } from "$sdk/src/component.ts";
import plugin from "$crate/src/plugin.ts";
warmUp(plugin);
bindImports({ caller, clock, log, data, listing, people, licensing, pricing });
export const tool = exportTool(plugin);
ENTRY
    "$PLUGIN_NODE_BIN/esbuild" "$work/entry.js" --bundle --format=esm --platform=neutral \
        --target=es2022 --external:'loan:reporting/*' --alias:@loanhost/plugin="$sdk/src/index.ts" \
        --define:LOANHOST_PROFILE="$([ "${LOANHOST_SDK_PROFILE:-}" = 1 ] && echo true || echo false)" \
        --log-level=warning --outfile="$work/bundle.js" >&2
    # componentize-js 0.23 itself, not through jco 1.35 (which builds with its own 0.22): its
    # bindings enter an export and an import without jco's async task bookkeeping, a sixth of
    # a TypeScript call (docs/benchmarks.md). Imports nothing but loan:reporting: every WASI
    # feature disabled.
    "$PLUGIN_NODE_BIN/componentize-js" "$work/bundle.js" --wit "$wit" --world-name reporting-tool \
        --disable stdio random clocks http fetch-event -o "$tmp_wasm" >&2
else
    echo "build-plugin: $crate has no Cargo.toml (Rust), plugin.py (Python) or src/plugin.ts (TypeScript)" >&2
    exit 1
fi
# The view (if the plugin has one) before the manifest that declares it, so a watching server
# never reads a manifest whose view is missing.
if [ -d "$crate/view" ]; then
    "$root/scripts/build-view.sh" "$crate" "$out_dir" >/dev/null
else
    rm -f "$out_dir/$tool.html"
fi
mv -f "$tmp_wasm" "$out_dir/$tool.wasm"
cp "$crate/$tool.toml" "$out_dir/.$tool.toml.tmp" && mv -f "$out_dir/.$tool.toml.tmp" "$out_dir/$tool.toml"
echo "$out_dir/$tool.wasm"
