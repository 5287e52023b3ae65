#!/usr/bin/env bash
# The encoder's 64-bit ARM paths, on this x86-64 machine: the encoder crate's tests and the
# model's reference vectors (tests/embed.rs), cross-built for aarch64 and run under qemu twice,
# as a CPU with the dot-product extension (`sdot`: Apple's M-series, Graviton 2 and later) and as
# one without it (NEON alone: Cortex-A72, a Raspberry Pi 4). Installs what it needs: the Rust
# target (rustup), Debian's cross linker and qemu (apt, as root). Timings under qemu mean
# nothing; what this checks is that every path gives the same sums and the same vectors.
set -euo pipefail
cd "$(dirname "$0")/../.."
target=aarch64-unknown-linux-gnu
sysroot=/usr/aarch64-linux-gnu
if ! command -v qemu-aarch64 >/dev/null || ! command -v aarch64-linux-gnu-gcc >/dev/null || [ ! -d "$sysroot/lib" ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "tests/arm/run.sh: apt-get needs root; install the Debian packages qemu-user, gcc-aarch64-linux-gnu and libc6-dev-arm64-cross" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross >/dev/null
fi
if ! rustup target list --installed | grep -qx "$target"; then
    rustup target add "$target"
fi
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc
cargo clippy --locked --target "$target" -p ovmem-encoder --all-targets -- -D warnings
for cpu in max cortex-a72; do
    echo "tests/arm/run.sh: aarch64 under qemu, -cpu $cpu"
    export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -cpu $cpu -L $sysroot"
    cargo test --locked --target "$target" -p ovmem-encoder
    cargo test --locked --target "$target" --test embed
done
