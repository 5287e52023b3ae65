#!/usr/bin/env bash
# Builds every ovmem package from one release build into target/dist/ (or $OVMEM_DIST_OUT):
#   ovmem-<v>.tgz, ovmem-linux-x64-<v>.tgz   npm: the launcher and the platform package
#   ovmem-<v>-py3-none-<platform>.whl        PyPI: the binary as a script (pip/pipx)
#   ovmem-<v>.crate                           crates.io: `cargo package`, verified by building it
#   ovmem-<v>-<target>.tar.gz + .sha256       the release archive install.sh downloads
# The version is Cargo.toml's, everywhere. Settings (for tests; defaults build the release):
#   OVMEM_DIST_BINARY=path   package this binary instead of building `cargo build --release`
#   OVMEM_DIST_OUT=dir       where the artifacts go
#   OVMEM_DIST_SKIP_CRATE=1  leave out `cargo package` (a second, verifying build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OVMEM_DIST_OUT:-$root/target/dist}

die() { echo "dist/build.sh: $*" >&2; exit 1; }

version=$(sed -n '/^\[package\]/,/^\[/{s/^version *= *"\([^"]*\)".*/\1/p}' "$root/Cargo.toml" | head -n1)
[ -n "$version" ] || die "no version in $root/Cargo.toml's [package]"

# Only this host's target is built here; the names below are the other platforms' slots.
case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) target=x86_64-unknown-linux-gnu npm_platform=linux-x64 os=linux cpu=x64 ;;
    *) die "only linux-x64 is packaged here (this is $(uname -s)-$(uname -m))" ;;
esac

if [ -n "${OVMEM_DIST_BINARY:-}" ]; then
    bin=$OVMEM_DIST_BINARY
else
    cargo build --release --locked --manifest-path "$root/Cargo.toml"
    bin=$root/target/release/ovmem
fi
[ -x "$bin" ] || die "no executable at $bin"
said=$("$bin" --version)
[ "$said" = "ovmem $version" ] || die "$bin says \`$said\`, Cargo.toml says $version"

mkdir -p "$out"
rm -f "$out"/ovmem-*.tgz "$out"/ovmem-*.whl "$out"/ovmem-*.tar.gz "$out"/ovmem-*.sha256 "$out"/ovmem-*.crate
work=$(mktemp -d "$out/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT
# One binary for every artifact, without symbols (the release profile strips already).
cp "$bin" "$work/ovmem"
strip "$work/ovmem" 2>/dev/null || true
chmod 755 "$work/ovmem"

# The glibc the binary needs decides its manylinux tag; it links only libraries every
# manylinux system has (checked, so a new dependency cannot slip a wrong tag through).
glibc=$(objdump -T "$work/ovmem" | grep -o 'GLIBC_2\.[0-9]*' | sed 's/GLIBC_2\.//' | sort -n | tail -n1)
[ -n "$glibc" ] || die "could not read the glibc symbol versions of $bin (objdump -T)"
for lib in $(readelf -d "$work/ovmem" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'); do
    case "$lib" in
        libc.so.6 | libm.so.6 | libgcc_s.so.1 | libpthread.so.0 | libdl.so.2 | librt.so.1 | ld-linux-x86-64.so.2) ;;
        *) die "the binary links $lib, which manylinux does not promise" ;;
    esac
done
wheel_platform="manylinux_2_${glibc}_x86_64"

# npm: the platform package carries the binary; the launcher names every platform's package
# as an optional dependency and npm installs the one whose os/cpu match.
plat=$work/npm-platform
mkdir -p "$plat/bin"
cp "$work/ovmem" "$plat/bin/ovmem"
cat >"$plat/package.json" <<JSON
{
  "name": "@ovmem/$npm_platform",
  "version": "$version",
  "description": "The ovmem binary for $npm_platform (installed by the ovmem package)",
  "license": "MIT OR Apache-2.0",
  "os": ["$os"],
  "cpu": ["$cpu"],
  "libc": ["glibc"],
  "files": ["bin"]
}
JSON
launcher=$work/npm-launcher
mkdir -p "$launcher/bin"
cp "$root/dist/npm/ovmem.js" "$launcher/bin/ovmem.js"
chmod 755 "$launcher/bin/ovmem.js"
optional=""
for p in linux-x64 linux-arm64 darwin-x64 darwin-arm64 win32-x64 win32-arm64; do
    optional="$optional${optional:+,
}    \"@ovmem/$p\": \"$version\""
done
cat >"$launcher/package.json" <<JSON
{
  "name": "ovmem",
  "version": "$version",
  "description": "Deterministic long-term memory for coding agents, through their own lifecycle hooks",
  "license": "MIT OR Apache-2.0",
  "bin": { "ovmem": "bin/ovmem.js" },
  "files": ["bin/ovmem.js"],
  "engines": { "node": ">=16" },
  "optionalDependencies": {
$optional
  }
}
JSON
cp "$root/README.md" "$launcher/README.md"
(cd "$plat" && npm pack --silent --pack-destination "$out" >/dev/null)
(cd "$launcher" && npm pack --silent --pack-destination "$out" >/dev/null)
[ -f "$out/ovmem-$npm_platform-$version.tgz" ] && [ -f "$out/ovmem-$version.tgz" ] || die "npm pack wrote no .tgz"

# PyPI.
python3 "$root/dist/wheel.py" "$work/ovmem" "$version" "$wheel_platform" "$out" >/dev/null

# The release archive and its checksum, reproducible (sorted, fixed times and owners).
name=ovmem-$version-$target
mkdir -p "$work/$name"
cp "$work/ovmem" "$work/$name/ovmem"
cp "$root/README.md" "$work/$name/README.md"
tar -C "$work" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - "$name" | gzip -n -9 >"$out/$name.tar.gz"
(cd "$out" && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")

# crates.io: `cargo package` builds the packaged crate from its own files, so what is
# published is known to compile with the committed Cargo.lock.
if [ -z "${OVMEM_DIST_SKIP_CRATE:-}" ]; then
    # Both crates of the workspace together: ovmem's is verified against the encoder's package.
    cargo package --locked --workspace --manifest-path "$root/Cargo.toml"
    cp "$root/target/package/ovmem-$version.crate" "$root/target/package/ovmem-encoder-"*.crate "$out/"
fi

echo "dist/build.sh: ovmem $version ($target, wheel $wheel_platform) in $out:"
(cd "$out" && ls -1 | sed 's/^/  /')
