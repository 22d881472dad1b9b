#!/usr/bin/env bash
# Ensures (idempotently) a local PostgreSQL for the tests: installs Debian's package when
# missing, starts the cluster, creates the `loanhost` role (CREATEDB), and prints its URL.
# Each test creates its own database in it.
#
# `--bench` also sizes the cluster's shared buffers for the benchmarks, as for a dedicated
# database server (a quarter of the memory, at most 8 GB; Debian's default is 128 MB, an eighth
# of the 1M-loan table), and restarts the cluster when that changes the setting: run it when no
# test is using the cluster. The host's SQLite connections are sized alike (`data::store`:
# a 128 MB page cache and a 4 GB memory map).
set -euo pipefail
log() { echo "postgres: $*" >&2; }
bench=false
case "${1:-}" in
    "") ;;
    --bench) bench=true ;;
    *) log "unknown argument '$1' (expected nothing or --bench)"; exit 2 ;;
esac

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
# Waits (up to 15 s) until the cluster answers, after a start or a restart.
wait_ready() {
    for _ in $(seq 1 30); do
        as_postgres "psql -p $port -tAc 'select 1'" >/dev/null 2>&1 && return
        sleep 0.5
    done
}
wait_ready
if ! as_postgres "psql -p $port -tAc \"select 1 from pg_roles where rolname = 'loanhost'\"" | grep -q 1; then
    log "creating role loanhost"
    as_postgres "psql -p $port -qc \"create role loanhost login createdb password 'loanhost'\"" >&2
fi
if $bench; then
    memory_kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
    limit=$(cat /sys/fs/cgroup/memory.max 2>/dev/null || echo max)
    if [ "$limit" != max ] && [ $((limit / 1024)) -lt "$memory_kb" ]; then
        memory_kb=$((limit / 1024))
    fi
    want_mb=$((memory_kb / 4 / 1024))
    [ "$want_mb" -gt 8192 ] && want_mb=8192
    [ "$want_mb" -lt 128 ] && want_mb=128
    have=$(as_postgres "psql -p $port -tAc \"select pg_size_bytes(current_setting('shared_buffers')) / 1048576\"")
    if [ "$have" != "$want_mb" ]; then
        log "shared_buffers ${have} MB -> ${want_mb} MB; restarting cluster $version/$cluster"
        as_postgres "psql -p $port -qc \"alter system set shared_buffers = '${want_mb}MB'\"" >&2
        pg_ctlcluster "$version" "$cluster" restart >&2
        wait_ready
    fi
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
