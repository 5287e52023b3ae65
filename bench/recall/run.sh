#!/usr/bin/env bash
# The recall benchmark in one command: builds the release binary, then feeds every suite through
# its real hook path against throwaway homes. See bench/recall/README.md.
# usage: bash bench/recall/run.sh [--quick] [--suites public,coding,needle] [--sizes 1k,10k,100k,1M]
#                                 [--capture hooks|import] [--out FILE] ...  (--help for all)
set -euo pipefail
cd "$(dirname "$0")/../.."
target="${CARGO_TARGET_DIR:-$PWD/target}"
python3 bench/recall/selftest.py
cargo build --release --locked --quiet
# What was measured: the last commit that touched the binary's sources (bench/ changes don't count).
src=(src Cargo.toml Cargo.lock build.rs adapters manifests templates)
rev="$(git log -1 --format=%h -- "${src[@]}" 2>/dev/null || echo unknown)"
dirty="$(git status --porcelain -- "${src[@]}" 2>/dev/null | head -1)"
exec python3 bench/recall/recall_bench.py --ovmem "$target/release/ovmem" --label "src ${rev}${dirty:+-dirty}" "$@"
