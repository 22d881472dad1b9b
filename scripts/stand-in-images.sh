#!/usr/bin/env bash
# Builds local stand-ins for the two public images deploy/compose.yaml names, from this
# machine's Debian packages, for machines that cannot pull them (like the test machines):
#   localhost/loanhost-postgres:15   PostgreSQL 15 (postgresql-15), with the official image's
#                                    POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB and
#                                    its data in /var/lib/postgresql/data
#   localhost/loanhost-registry:2    the reference registry (docker-registry, distribution 2.8),
#                                    configured like the official registry:2 image
# Each starts FROM scratch with the binaries, the libraries `ldd` names and (PostgreSQL's
# first-start script) dash. Run with POSTGRES_IMAGE and REGISTRY_IMAGE pointing at them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/rootfs.sh"
"$root/scripts/containers.sh" >/dev/null
export CONTAINERS_CONF=${CONTAINERS_CONF:-$HOME/.cache/loanhost/containers.conf}
if ! [ -x /usr/lib/postgresql/15/bin/postgres ] || ! command -v docker-registry >/dev/null; then
    sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends postgresql-15 docker-registry >&2
fi
context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT

# Copies each file, and every library it links, into $1 at the same paths.
with_libraries() {
    local rootfs=$1; shift
    local file
    for file in "$@"; do
        mkdir -p "$rootfs$(dirname "$file")"
        cp -aL "$file" "$rootfs$file"
    done
    copy_libraries "$rootfs" "$@"
}

# PostgreSQL.
pg="$context/postgres/rootfs"
mkdir -p "$pg/etc" "$pg/tmp" "$pg/usr/share" "$context/postgres/owned/var/lib/postgresql/data" \
    "$context/postgres/owned/var/run/postgresql"
with_libraries "$pg" /bin/sh /usr/lib/postgresql/15/bin/postgres /usr/lib/postgresql/15/bin/initdb \
    /usr/lib/postgresql/15/bin/pg_isready
cp -a /usr/lib/postgresql/15/lib "$pg/usr/lib/postgresql/15/"
copy_libraries "$pg" /usr/lib/postgresql/15/lib/*.so
mkdir -p "$pg/usr/share/postgresql"
cp -a /usr/share/postgresql/15 "$pg/usr/share/postgresql/"
cp -a /usr/share/zoneinfo "$pg/usr/share/" 2>/dev/null || true
printf 'root:x:0:0::/root:/bin/sh\npostgres:x:999:999::/var/lib/postgresql:/bin/sh\n' > "$pg/etc/passwd"
printf 'root:x:0:\npostgres:x:999:\n' > "$pg/etc/group"
cat > "$pg/entrypoint.sh" <<'SCRIPT'
#!/bin/sh
# The official image's first start: a cluster for POSTGRES_USER with POSTGRES_PASSWORD and the
# database POSTGRES_DB, password authentication from anywhere; then the server, with "$@".
set -eu
PGDATA=${PGDATA:-/var/lib/postgresql/data}
if ! [ -s "$PGDATA/PG_VERSION" ]; then
    printf '%s\n' "$POSTGRES_PASSWORD" > /tmp/pwfile
    /usr/lib/postgresql/15/bin/initdb -D "$PGDATA" -U "${POSTGRES_USER:-postgres}" \
        --pwfile=/tmp/pwfile -A scram-sha-256 -E UTF8 --locale=C >/dev/null 2>&1
    : > /tmp/pwfile
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    /usr/lib/postgresql/15/bin/postgres --single -D "$PGDATA" -j postgres >/dev/null <<SQL
CREATE DATABASE "${POSTGRES_DB:-${POSTGRES_USER:-postgres}}" OWNER "${POSTGRES_USER:-postgres}";
SQL
fi
exec /usr/lib/postgresql/15/bin/postgres -D "$PGDATA" -c listen_addresses='*' \
    -c unix_socket_directories=/var/run/postgresql "$@"
SCRIPT
chmod +x "$pg/entrypoint.sh"
chmod 700 "$context/postgres/owned/var/lib/postgresql/data"
chmod 1777 "$pg/tmp"
cat > "$context/postgres/Containerfile" <<'EOF2'
FROM scratch
COPY rootfs/ /
COPY --chown=999:999 owned/ /
USER 999:999
ENV PGDATA=/var/lib/postgresql/data PATH=/usr/lib/postgresql/15/bin
VOLUME /var/lib/postgresql/data
EXPOSE 5432
ENTRYPOINT ["/entrypoint.sh"]
EOF2
buildah --storage-driver vfs bud --quiet --layers=false -t localhost/loanhost-postgres:15 \
    "$context/postgres" >/dev/null

# The registry.
rg="$context/registry/rootfs"
mkdir -p "$rg/etc/docker/registry" "$rg/var/lib/registry"
with_libraries "$rg" /usr/bin/docker-registry
cat > "$rg/etc/docker/registry/config.yml" <<'YAML'
version: 0.1
log:
  fields:
    service: registry
storage:
  filesystem:
    rootdirectory: /var/lib/registry
http:
  addr: :5000
YAML
cat > "$context/registry/Containerfile" <<'EOF2'
FROM scratch
COPY rootfs/ /
VOLUME /var/lib/registry
EXPOSE 5000
ENTRYPOINT ["/usr/bin/docker-registry", "serve", "/etc/docker/registry/config.yml"]
EOF2
buildah --storage-driver vfs bud --quiet --layers=false -t localhost/loanhost-registry:2 \
    "$context/registry" >/dev/null
echo "localhost/loanhost-postgres:15 localhost/loanhost-registry:2"
