#!/bin/sh
# Builds ovmem from this checkout and installs it to ${OVMEM_INSTALL_DIR:-~/.local/bin}.
# Extra arguments are passed to `ovmem install` (for example: --harness all).
set -eu

need_cmd() {
    if ! command -v "$1" >/dev/null 2>&1; then
        echo "install.sh: \`$1\` is required: $2" >&2
        exit 1
    fi
}

main() {
    need_cmd cargo "install Rust from https://rustup.rs, then run this script again"
    src=$(cd "$(dirname "$0")" && pwd)
    dest="${OVMEM_INSTALL_DIR:-$HOME/.local/bin}"
    cargo build --release --locked --manifest-path "$src/Cargo.toml"
    mkdir -p "$dest"
    tmp="$dest/.ovmem.tmp.$$"
    cp "$src/target/release/ovmem" "$tmp"
    chmod 755 "$tmp"
    mv -f "$tmp" "$dest/ovmem"
    echo "installed $dest/ovmem"
    case ":$PATH:" in
        *":$dest:"*) ;;
        *) echo "note: $dest is not on your PATH; add it, or run $dest/ovmem" ;;
    esac
    if [ "$#" -gt 0 ]; then
        "$dest/ovmem" install "$@"
    else
        # The list comes from the binary's own registry, so it is never out of date.
        supported=$("$dest/ovmem" harnesses --format ids 2>/dev/null | sed 's/,/, /g')
        echo "next: ovmem install                 (choose the agents on a terminal)"
        echo "      ovmem install --harness all   (every agent detected on this machine)"
        echo "      supported: ${supported:-see \`ovmem harnesses\`}"
    fi
}

main "$@"
