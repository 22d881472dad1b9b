#!/usr/bin/env bash
# Installs (idempotently) what builds and runs the images: Debian's buildah, podman and runc, and
# a containers.conf these sandboxes need: `default_ulimits = []` (setting RLIMIT_NPROC is
# refused here), and runc with the cgroupfs manager (crun refuses the hybrid cgroup layout of
# these machines). Prints the containers.conf path; export it as CONTAINERS_CONF.
set -euo pipefail
if ! command -v buildah >/dev/null 2>&1 || ! command -v podman >/dev/null 2>&1 \
    || ! command -v runc >/dev/null 2>&1; then
    echo "containers: installing Debian's buildah, podman and runc" >&2
    sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends buildah podman runc >&2
fi
conf="$HOME/.cache/loanhost/containers.conf"
want='[containers]\ndefault_ulimits = []\n[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\n'
if ! [ -f "$conf" ] || [ "$(cat "$conf")" != "$(printf "$want")" ]; then
    mkdir -p "$(dirname "$conf")"
    printf "$want" > "$conf"
fi
echo "$conf"
