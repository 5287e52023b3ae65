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
rev="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
dirty="$(git status --porcelain -- src Cargo.toml Cargo.lock 2>/dev/null | head -1)"
exec python3 bench/recall/recall_bench.py --ovmem "$target/release/ovmem" --label "${rev}${dirty:+-dirty}" "$@"
