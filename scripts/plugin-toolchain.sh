#!/usr/bin/env bash
# Sets up (idempotently) the pinned toolchains that build and test Python and TypeScript
# plugins, inside the clone, and prints the shell assignments the build scripts use:
#   PLUGIN_PY        the Python of plugins/toolchain/.venv (componentize-py 0.25.1, pytest)
#   PLUGIN_NODE_BIN  plugins/toolchain/node_modules/.bin (componentize-js 0.23, which builds
#                    the components; jco 1.35; esbuild, TypeScript), from
#                    plugins/toolchain/package-lock.json
#   PLUGIN_VIEWS     plugins/views, its node_modules installed from its package-lock.json (the
#                    MCP Apps SDK and Observable Plot that views bundle); with `views`, the
#                    TypeScript toolchain too (esbuild bundles them)
# Usage: eval "$(scripts/plugin-toolchain.sh [python|typescript|views|all])"
#
# Supply chain: Python packages are installed only as wheels whose SHA-256 the requirements
# file lists (`--require-hashes --only-binary :all:`, dependencies included); npm packages only
# as the lockfiles' tarballs, each checked against its integrity hash, with no install script
# run (`--ignore-scripts`: esbuild's binary comes from its platform package, hash-checked
# like the rest, and is then run once to check it answers). This script installs no system
# package: without python3-venv or npm it says so (`make deps` installs them).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/plugins/toolchain"
want=${1:-all}
log() { echo "plugin-toolchain: $*" >&2; }

if [ "$want" = all ] || [ "$want" = python ]; then
    venv="$dir/.venv"
    if ! [ -x "$venv/bin/python" ] || ! cmp -s "$dir/requirements.txt" "$venv/.requirements-installed"; then
        log "preparing $venv (componentize-py, pytest)"
        [ -x "$venv/bin/python" ] || python3 -m venv "$venv" >&2 || {
            log "cannot create a Python venv: install python3-venv (make deps does)"
            exit 1
        }
        "$venv/bin/pip" install -q --require-hashes --only-binary :all: -r "$dir/requirements.txt" >&2
        cp "$dir/requirements.txt" "$venv/.requirements-installed"
    fi
    echo "PLUGIN_PY=$venv/bin/python"
fi

if [ "$want" = all ] || [ "$want" = typescript ] || [ "$want" = views ]; then
    if ! [ -f "$dir/node_modules/.package-lock.json" ] || ! cmp -s "$dir/package-lock.json" "$dir/node_modules/.lock-installed"; then
        command -v npm >/dev/null 2>&1 || { log "npm is missing: install nodejs and npm (make deps does)"; exit 1; }
        log "installing the TypeScript plugin toolchain (npm ci: jco, componentize-js, esbuild, TypeScript)"
        (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund >&2 \
            && node_modules/.bin/esbuild --version >/dev/null \
            && cp package-lock.json node_modules/.lock-installed)
    fi
    echo "PLUGIN_NODE_BIN=$dir/node_modules/.bin"
fi

if [ "$want" = all ] || [ "$want" = views ]; then
    views="$root/plugins/views"
    if ! [ -f "$views/node_modules/.package-lock.json" ] || ! cmp -s "$views/package-lock.json" "$views/node_modules/.lock-installed"; then
        log "installing the view libraries (npm ci: the MCP Apps SDK, Observable Plot)"
        (cd "$views" && npm ci --ignore-scripts --no-audit --no-fund >&2 && cp package-lock.json node_modules/.lock-installed)
    fi
    echo "PLUGIN_VIEWS=$views"
fi
