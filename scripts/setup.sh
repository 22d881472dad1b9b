#!/usr/bin/env bash
# Installs (idempotently) what building and testing loanhost needs on a Debian machine:
# the Wasm component toolchain (see scripts/wasm-toolchain.sh) and rustfmt/clippy, the real MCP
# and OAuth test peers, and Debian's Chromium for the views' browser tests.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

"$root/scripts/wasm-toolchain.sh" >/dev/null

for component in rustfmt clippy; do
    if ! cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1; then
        timeout 120 rustup component add "$component" >&2 || echo "setup: could not add $component" >&2
    fi
done

# Real MCP and OAuth clients for the end-to-end tests.
venv="$root/.venv"
requirements="$root/tests/clients/requirements.txt"
if ! [ -x "$venv/bin/python" ] || ! cmp -s "$requirements" "$venv/.requirements-installed"; then
    echo "setup: preparing $venv (Python MCP SDK, JSON Schema and OpenAPI validators)" >&2
    if ! [ -x "$venv/bin/python" ]; then
        python3 -m venv "$venv" >&2 || { apt_get_python_venv=1; }
        if [ "${apt_get_python_venv:-}" = 1 ]; then
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >&2
            python3 -m venv "$venv" >&2
        fi
    fi
    # Every package pinned to a wheel whose SHA-256 the file lists, dependencies included.
    "$venv/bin/pip" install -q --require-hashes --only-binary :all: -r "$requirements" >&2
    cp "$requirements" "$venv/.requirements-installed"
fi
clients="$root/tests/clients"
if ! [ -f "$clients/node_modules/.package-lock.json" ] || ! cmp -s "$clients/package-lock.json" "$clients/node_modules/.lock-installed"; then
    command -v npm >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >&2
    echo "setup: installing the Node test peers (npm ci)" >&2
    # Each tarball checked against the lock file's integrity hash; no install script runs but
    # those of the three packages that need one, named here: the Node 22 binary's (`node`
    # installs its platform package), esbuild's (it checks its platform binary) and the MCP
    # Inspector's (it links its bundled clients).
    (cd "$clients" && npm ci --ignore-scripts --no-audit --no-fund >&2 \
        && npm rebuild --no-audit --no-fund node esbuild @modelcontextprotocol/inspector >&2 \
        && cp package-lock.json node_modules/.lock-installed)
fi

# Debian's Chromium: the views' browser tests drive it with playwright-core (which downloads no
# browser of its own).
if ! [ -x /usr/bin/chromium ]; then
    echo "setup: installing Debian's chromium (the views' browser tests)" >&2
    sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >&2
fi

# The reference OCI registry and an independent client: the registry tests start
# `docker-registry` on a loopback port and read what `plugin push` wrote with `skopeo`.
if ! command -v docker-registry >/dev/null 2>&1 || ! command -v skopeo >/dev/null 2>&1; then
    echo "setup: installing Debian's docker-registry and skopeo (the registry tests)" >&2
    sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends docker-registry skopeo >&2
fi

# wrk: the `hot_path` bench's load generator from outside (as a user's load tool calls).
if ! command -v wrk >/dev/null 2>&1; then
    echo "setup: installing Debian's wrk (the hot_path bench)" >&2
    sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends wrk >&2
fi

# Images without a daemon (the deploy tests): buildah, podman, runc and a containers.conf these
# machines need; PostgreSQL 15 and docker-registry for the compose stack's stand-in images.
"$root/scripts/containers.sh" >/dev/null
if ! [ -x /usr/lib/postgresql/15/bin/postgres ]; then
    sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends postgresql-15 >&2
fi
