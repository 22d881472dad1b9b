#!/usr/bin/env bash
# Ensures (idempotently) a local PostgreSQL for the tests: installs Debian's package when
# missing, starts the cluster, creates the `loanhost` role (CREATEDB), and prints its URL.
# Each test creates its own database in it.
set -euo pipefail
log() { echo "postgres: $*" >&2; }

if ! command -v pg_ctlcluster >/dev/null 2>&1 || ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
    log "installing Debian's postgresql"
    sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql >&2
fi

read -r version cluster port status < <(pg_lsclusters --no-header | head -1 | awk '{print $1, $2, $3, $4}') || true
if [ -z "${version:-}" ]; then
    version=$(ls /usr/lib/postgresql | sort -V | tail -1)
    log "creating cluster $version/main"
    pg_createcluster "$version" main >&2
    read -r version cluster port status < <(pg_lsclusters --no-header | head -1 | awk '{print $1, $2, $3, $4}')
fi
if [ "$status" != online ]; then
    log "starting cluster $version/$cluster on port $port"
    pg_ctlcluster "$version" "$cluster" start >&2
fi

as_postgres() {
    if [ "$(id -u)" = 0 ]; then su postgres -c "$1"; else sudo -u postgres sh -c "$1"; fi
}
for _ in $(seq 1 30); do
    as_postgres "psql -p $port -tAc 'select 1'" >/dev/null 2>&1 && break
    sleep 0.5
done
if ! as_postgres "psql -p $port -tAc \"select 1 from pg_roles where rolname = 'loanhost'\"" | grep -q 1; then
    log "creating role loanhost"
    as_postgres "psql -p $port -qc \"create role loanhost login createdb password 'loanhost'\"" >&2
fi
# Databases of earlier test runs (`loanhost_test_<pid>_…`): only those whose test process is
# gone, so that two runs on one cluster do not drop each other's databases.
for db in $(as_postgres "psql -p $port -tAc \"select datname from pg_database where datname like 'loanhost_test_%'\""); do
    pid=$(echo "$db" | cut -d_ -f3)
    if [ -n "$pid" ] && [ -d "/proc/$pid" ]; then
        continue
    fi
    as_postgres "psql -p $port -qc 'drop database if exists $db'" >/dev/null 2>&1 || true
done
echo "postgres://loanhost:loanhost@127.0.0.1:$port/postgres"
