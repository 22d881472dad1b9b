#!/usr/bin/env bash
# Sets up (idempotently) a toolchain that builds the plugins to WebAssembly components, and
# prints the shell assignments the build uses: PLUGIN_CARGO, PLUGIN_RUSTC, PLUGIN_BUILD_STD,
# PLUGIN_RUSTFLAGS.
#
# 1. rustup's `wasm32-unknown-unknown` target when it is installed or can be added within a
#    short timeout (the normal case on a developer machine);
# 2. otherwise Debian's `rustc-web cargo-web rust-web-src`, building `std` from source with
#    `-Zbuild-std` (the verified path on machines where rustup cannot download).
# Either way the linker is `wasm-component-ld`, so the output is a component.
set -euo pipefail

log() { echo "wasm-toolchain: $*" >&2; }

sysroot=$(rustc --print sysroot)
host_triple=$(rustc -vV | sed -n 's/^host: //p')
component_ld="$sysroot/lib/rustlib/$host_triple/bin/wasm-component-ld"

if ! [ -x "$component_ld" ]; then
    if command -v wasm-component-ld >/dev/null 2>&1; then
        component_ld=$(command -v wasm-component-ld)
    else
        log "wasm-component-ld not in the rustup toolchain; installing it with cargo"
        cargo install --locked wasm-component-ld >&2
        component_ld=$(command -v wasm-component-ld)
    fi
fi

wasm_ld=""
for candidate in "$sysroot/lib/rustlib/$host_triple/bin/gcc-ld/wasm-ld" /usr/lib/llvm-19/bin/wasm-ld; do
    if [ -x "$candidate" ]; then wasm_ld=$candidate; break; fi
done

# WASM_TOOLCHAIN=auto (default) | rustup | debian forces one path (e.g. to test the fallback).
mode=${WASM_TOOLCHAIN:-auto}
use_rustup=false
case "$mode" in
    debian) ;;
    rustup|auto)
        if rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
            use_rustup=true
        elif command -v rustup >/dev/null 2>&1 && timeout 45 rustup target add wasm32-unknown-unknown >/dev/null 2>&1; then
            use_rustup=true
        elif [ "$mode" = rustup ]; then
            log "rustup could not add wasm32-unknown-unknown"; exit 1
        fi ;;
    *) log "WASM_TOOLCHAIN must be auto, rustup or debian, not '$mode'"; exit 1 ;;
esac

apt_install() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing Debian packages: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >&2
}

if $use_rustup; then
    log "using rustup's wasm32-unknown-unknown target"
    echo "PLUGIN_CARGO=$(command -v cargo)"
    echo "PLUGIN_RUSTC=$(command -v rustc)"
    echo "PLUGIN_BUILD_STD="
else
    log "rustup target unavailable; using Debian's Rust with -Zbuild-std"
    apt_install rustc-web cargo-web rust-web-src
    [ -n "$wasm_ld" ] || { apt_install lld-19; wasm_ld=/usr/lib/llvm-19/bin/wasm-ld; }
    echo "PLUGIN_CARGO=/usr/bin/cargo"
    echo "PLUGIN_RUSTC=/usr/bin/rustc"
    echo "PLUGIN_BUILD_STD=-Zbuild-std=std,panic_abort"
fi
[ -n "$wasm_ld" ] || { apt_install lld-19; wasm_ld=/usr/lib/llvm-19/bin/wasm-ld; }
echo "PLUGIN_RUSTFLAGS='-C linker=$component_ld -C link-arg=--wasm-ld-path=$wasm_ld'"
