# Sourced by scripts/image.sh and scripts/stand-in-images.sh: staging a root filesystem for an
# image that starts FROM scratch.

# Copies every shared library each FILE links (what `ldd` names, the dynamic loader included)
# into ROOTFS at the same path:  copy_libraries ROOTFS FILE...
copy_libraries() {
    local rootfs=$1; shift
    local file lib
    for file in "$@"; do
        ldd "$file" 2>/dev/null | awk '/=>/ {print $3} !/=>/ && /^\t\// {print $1}' | while read -r lib; do
            [ -f "$lib" ] || continue
            mkdir -p "$rootfs$(dirname "$lib")"
            cp -L "$lib" "$rootfs$lib"
        done
    done
}
