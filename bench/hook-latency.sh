#!/usr/bin/env bash
# Whole-process latency of the prompt hook, the path every prompt pays:
#   ovmem's UserPromptSubmit hook (release build, 10,000 memories in the project's bank)
#   vs spawning /bin/true (the floor: the cost of starting any process)
#   vs Hindsight's hindsight-cline UserPromptSubmit hook (PyPI, in a venv; server down).
# usage: bench/hook-latency.sh [RUNS]   (default 300). Nothing leaves loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-300}"
cache="${OVMEM_BENCH_DIR:-$HOME/.cache/ovmem-bench}"
mkdir -p "$cache"
cargo build --release --locked --quiet
if [ ! -x "$cache/venv/bin/python" ] || ! "$cache/venv/bin/python" -c 'import hindsight_cline' 2>/dev/null; then
  python3 -m venv "$cache/venv"
  "$cache/venv/bin/pip" install --quiet 'hindsight-cline==0.2.0'
fi
hook=$("$cache/venv/bin/python" -c 'import hindsight_cline, os; print(os.path.join(os.path.dirname(hindsight_cline.__file__), "hooks", "UserPromptSubmit"))')
exec python3 bench/hook_latency.py --runs "$runs" --ovmem "$PWD/target/release/ovmem" \
  --hindsight-python "$cache/venv/bin/python" --hindsight-hook "$hook"
