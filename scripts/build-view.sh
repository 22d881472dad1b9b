#!/usr/bin/env bash
# Builds a plugin's MCP Apps view: <plugin>/view/main.ts (any plugin language: a view runs in
# the client's browser) bundled with the views library (plugins/views: the extension's SDK and
# Observable Plot) into one self-contained <tool>.html in OUT_DIR (default: <plugin>/dist),
# written beside its final name and renamed.
# Usage: scripts/build-view.sh PLUGIN_DIR [OUT_DIR]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
crate=$(cd "${1:?usage: build-view.sh PLUGIN_DIR [OUT_DIR]}" && pwd)
out_dir=${2:-$crate/dist}
[ -f "$crate/view/main.ts" ] || [ -f "$crate/view/main.js" ] || {
    echo "build-view: $crate/view has no main.ts or main.js" >&2
    exit 1
}
eval "$("$root/scripts/plugin-toolchain.sh" views)"
node "$PLUGIN_VIEWS/build.mjs" "$PLUGIN_NODE_BIN/../esbuild" "$crate" "$out_dir"
