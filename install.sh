#!/bin/sh
# Installs ovmem to ${OVMEM_INSTALL_DIR:-~/.local/bin}: the prebuilt release archive for this
# platform when one is published (checked against its .sha256; a mismatch installs nothing),
# else a build from this checkout with cargo. Extra arguments go to `ovmem install` (for
# example: --harness all).
#   OVMEM_DIST_URL     where releases live: <url>/v<version>/ovmem-<version>-<target>.tar.gz
#   OVMEM_VERSION      the version to install (default: this checkout's Cargo.toml)
#   OVMEM_FROM_SOURCE=1  build this checkout even when a release is available
set -eu

# The project's published releases (GitHub's layout: <base>/v<version>/<file>).
DEFAULT_DIST_URL="https://github.com/ovmem/ovmem/releases/download"

need_cmd() {
    if ! command -v "$1" >/dev/null 2>&1; then
        echo "install.sh: \`$1\` is required: $2" >&2
        exit 1
    fi
}

die() {
    echo "install.sh: $*" >&2
    exit 1
}

# This machine's Rust target triple, or nothing when no release is built for it.
target_triple() {
    case "$(uname -s)-$(uname -m)" in
        Linux-x86_64 | Linux-amd64) echo x86_64-unknown-linux-gnu ;;
        Linux-aarch64 | Linux-arm64) echo aarch64-unknown-linux-gnu ;;
        Darwin-x86_64) echo x86_64-apple-darwin ;;
        Darwin-arm64) echo aarch64-apple-darwin ;;
        *) ;;
    esac
}

# download URL FILE: 0 when FILE now holds URL's body.
download() {
    if command -v curl >/dev/null 2>&1; then
        curl -fsSL --connect-timeout 10 --retry 2 -o "$2" "$1" 2>/dev/null
    elif command -v wget >/dev/null 2>&1; then
        wget -q -T 10 -O "$2" "$1"
    else
        return 1
    fi
}

sha256_of() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$1" | cut -d' ' -f1
    elif command -v shasum >/dev/null 2>&1; then
        shasum -a 256 "$1" | cut -d' ' -f1
    else
        die "neither sha256sum nor shasum is installed, so the download cannot be checked; install one (coreutils)"
    fi
}

# Moves the binary at $1 into place as $dest/ovmem, atomically.
place() {
    mkdir -p "$dest" || die "could not create $dest; set OVMEM_INSTALL_DIR to a directory you can write"
    tmp="$dest/.ovmem.tmp.$$"
    cp "$1" "$tmp" && chmod 755 "$tmp" && mv -f "$tmp" "$dest/ovmem" || {
        rm -f "$tmp"
        die "could not write $dest/ovmem; set OVMEM_INSTALL_DIR to a directory you can write"
    }
}

# 0: installed from the release archive; 1: no release to download (the caller builds from
# source). A checksum mismatch or a broken archive ends the script, with nothing installed.
from_release() {
    version=$1
    triple=$(target_triple)
    [ -n "$triple" ] || return 1
    base=${OVMEM_DIST_URL:-$DEFAULT_DIST_URL}
    name="ovmem-$version-$triple"
    url="${base%/}/v$version/$name.tar.gz"
    work=$(mktemp -d "${TMPDIR:-/tmp}/ovmem-install.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    if ! download "$url" "$work/$name.tar.gz"; then
        echo "install.sh: no release at $url; building from source instead" >&2
        return 1
    fi
    download "$url.sha256" "$work/$name.tar.gz.sha256" ||
        die "$url.sha256 could not be downloaded, so $url cannot be checked; nothing was installed"
    want=$(cut -d' ' -f1 <"$work/$name.tar.gz.sha256")
    got=$(sha256_of "$work/$name.tar.gz")
    if [ "$want" != "$got" ]; then
        die "checksum mismatch for $url: expected $want (from $url.sha256), got $got; the download is damaged or was tampered with, and nothing was installed"
    fi
    tar -xzf "$work/$name.tar.gz" -C "$work" || die "could not unpack $url; nothing was installed"
    [ -x "$work/$name/ovmem" ] || die "$url holds no $name/ovmem; nothing was installed"
    said=$("$work/$name/ovmem" --version 2>/dev/null || true)
    [ "$said" = "ovmem $version" ] || die "the binary in $url says \`$said\`, not ovmem $version; nothing was installed"
    place "$work/$name/ovmem"
    echo "installed $dest/ovmem (ovmem $version, release $triple, sha256 $got)"
}

from_source() {
    src=$1
    [ -f "$src/Cargo.toml" ] || die "no release could be downloaded and there is no checkout here to build; set OVMEM_DIST_URL or OVMEM_VERSION, or run this script from a clone of ovmem"
    need_cmd cargo "install Rust from https://rustup.rs, then run this script again (or point OVMEM_DIST_URL at a release)"
    cargo build --release --locked --manifest-path "$src/Cargo.toml"
    place "$src/target/release/ovmem"
    echo "installed $dest/ovmem (built from $src)"
}

main() {
    src=$(cd "$(dirname "$0")" && pwd)
    dest="${OVMEM_INSTALL_DIR:-$HOME/.local/bin}"
    version=${OVMEM_VERSION:-}
    if [ -z "$version" ] && [ -f "$src/Cargo.toml" ]; then
        version=$(sed -n '/^\[package\]/,/^\[/{s/^version *= *"\([^"]*\)".*/\1/p;}' "$src/Cargo.toml" | head -n1)
    fi
    if [ -n "${OVMEM_FROM_SOURCE:-}" ] || [ -z "$version" ] || ! from_release "$version"; then
        from_source "$src"
    fi
    case ":$PATH:" in
        *":$dest:"*) ;;
        *) echo "note: $dest is not on your PATH; add it, or run $dest/ovmem" ;;
    esac
    if [ "$#" -gt 0 ]; then
        "$dest/ovmem" install "$@"
    else
        # The list comes from the binary's own registry, so it is never out of date. Running
        # the new binary also brings an already installed runtime up to date.
        supported=$("$dest/ovmem" harnesses --format ids 2>/dev/null | sed 's/,/, /g')
        echo "next: ovmem install                 (choose the agents on a terminal)"
        echo "      ovmem install --harness all   (every agent detected on this machine)"
        echo "      supported: ${supported:-see \`ovmem harnesses\`}"
    fi
}

main "$@"
