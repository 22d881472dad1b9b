#!/usr/bin/env bash
# `make run`: prepares the embedded SQLite database with demo data and starts the server with
# the embedded dev identity provider. Seeding is deterministic and the import idempotent, so
# running this again leaves the same data.
set -euo pipefail
bin=$1
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export LOANHOST_DEV_IDP=${LOANHOST_DEV_IDP:-true}
export LOANHOST_PLUGIN_DIR=${LOANHOST_PLUGIN_DIR:-plugins/dist}
listen=${LOANHOST_LISTEN:-127.0.0.1:8080}
base=${LOANHOST_BASE_URL:-http://$listen}
loans=${DEMO_LOANS:-5000}
plugin_dir=$(cd "$LOANHOST_PLUGIN_DIR" 2>/dev/null && pwd || echo "$LOANHOST_PLUGIN_DIR")

echo "Preparing the demo database (${LOANHOST_DATABASE_URL:-sqlite://data/loanhost.db}, $loans loans)..."
"$bin" seed --loans "$loans" --import >/dev/null

cat <<MSG

loanhost is starting on $base  (Ctrl-C stops it)

Demo users (roles), all @demo.loanhost.local: admin (Admin), processor (Processor),
  concierge (ConciergeKey), agent (Agent), prelicensed (Agent + PreLicensed),
  lead (Agent + ConciergeKey), officer-processor (DualLicensedAgent + Processor),
  referrer-concierge (Agent + PreLicensed + ConciergeKey)

Get a token and call a tool, in another terminal (from any folder):
  TOKEN=\$(cd $root && $bin token --email agent@demo.loanhost.local)
  curl -s $base/mcp -H "Authorization: Bearer \$TOKEN" -H 'Content-Type: application/json' \\
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_loan_reporting_metadata","arguments":{}}}'

MCP clients with OAuth: server $base/mcp, pre-registered client_id loanhost-demo,
  client_secret loanhost-demo-secret; the dev IdP's sign-in page lets you pick a demo user.
Health: curl -s $base/health
Views: the five reports' charts are MCP Apps resources (resources/list, ui://loanhost/<tool>);
  an MCP Apps client draws them; README.md, "Seeing the views", shows other ways.
Plugins: $plugin_dir is watched; copy a <tool>.wasm + <tool>.toml (+ its <tool>.html view) there to deploy
  (\`make plugins\` builds new tools into plugins/build/ and deploys only the shipped ones).
Signed plugins: LOANHOST_TRUSTED_KEYS="<your public key>" make run trusts your key (docs/plugins.md).

MSG
exec "$bin" serve
