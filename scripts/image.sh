#!/usr/bin/env bash
# Builds the server image (deploy/image/Containerfile) without a daemon: stages a root
# filesystem from the release binary (debug info stripped), the shared libraries `ldd` names,
# the CA certificates, a passwd entry for the non-root user 10001, and the shipped plugins;
# then `buildah bud` with the vfs storage driver. Prints the image's name and size.
#   scripts/image.sh BINARY PLUGIN_DIR [TAG]     (TAG: localhost/loanhost:<version>)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/rootfs.sh"
binary=${1:?the release binary}
plugins=${2:?the shipped plugins folder}
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n 1)
tag=${3:-localhost/loanhost:$version}

"$root/scripts/containers.sh" >/dev/null
export CONTAINERS_CONF=${CONTAINERS_CONF:-$HOME/.cache/loanhost/containers.conf}

context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
rootfs="$context/rootfs"
mkdir -p "$rootfs/usr/local/bin" "$rootfs/opt/loanhost/plugins" "$rootfs/etc/ssl/certs" \
    "$rootfs/tmp" "$rootfs/opt/loanhost/empty" "$context/data/cache"
objcopy --strip-debug "$binary" "$rootfs/usr/local/bin/loanhost"
# The dynamic loader and every library the binary links (glibc, libgcc_s, libm).
copy_libraries "$rootfs" "$binary"
cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/"
printf 'root:x:0:0:root:/root:/sbin/nologin\nloanhost:x:10001:10001:loanhost:/data:/sbin/nologin\n' > "$rootfs/etc/passwd"
printf 'root:x:0:\nloanhost:x:10001:\n' > "$rootfs/etc/group"
cp "$plugins"/*.wasm "$plugins"/*.toml "$rootfs/opt/loanhost/plugins/"
cp "$plugins"/*.html "$rootfs/opt/loanhost/plugins/" 2>/dev/null || true
chmod 1777 "$rootfs/tmp"
cp "$root/deploy/image/Containerfile" "$context/"

revision=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)
created=$(date -u +%Y-%m-%dT%H:%M:%SZ)
server_name=$(sed -n 's/^  "name": "\(.*\)",/\1/p' "$root/server.json" | head -n 1)
buildah --storage-driver vfs bud --quiet --layers=false \
    --label "org.opencontainers.image.title=loanhost" \
    --label "org.opencontainers.image.description=MCP server for mortgage loan reporting: OAuth 2.1, sandboxed WebAssembly report plugins" \
    --label "org.opencontainers.image.version=$version" \
    --label "org.opencontainers.image.revision=$revision" \
    --label "org.opencontainers.image.created=$created" \
    --label "org.opencontainers.image.licenses=Apache-2.0" \
    --label "org.opencontainers.image.source=https://github.com/loanhost/loanhost" \
    --label "io.modelcontextprotocol.server.name=$server_name" \
    -t "$tag" -f "$context/Containerfile" "$context" >/dev/null
size=$(podman --storage-driver vfs image inspect "$tag" --format '{{.Size}}')
echo "$tag $((size / 1024 / 1024)) MiB" >&2
echo "$tag"
