#!/usr/bin/env bash
# Starts the server for `make run` with the embedded dev identity provider.
set -euo pipefail
bin=$1
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mkdir -p data
export LOANHOST_DEV_IDP=${LOANHOST_DEV_IDP:-true}
export LOANHOST_PLUGIN_DIR=${LOANHOST_PLUGIN_DIR:-plugins/dist}
listen=${LOANHOST_LISTEN:-127.0.0.1:8080}
base=${LOANHOST_BASE_URL:-http://$listen}
cat <<MSG

loanhost is starting on $base
  health:  curl -s $base/health
  plugins: $LOANHOST_PLUGIN_DIR (hot-reloaded: copy a <tool>.wasm + <tool>.toml there)
  check a plugin: $bin plugin check plugins/dist/get_loan_reporting_metadata.wasm plugins/dist/get_loan_reporting_metadata.toml

MSG
exec "$bin" serve
