#!/usr/bin/env bash
# Installs the pinned memory servers the real-server tests run, from PyPI, into
# ${OVMEM_SERVERS_DIR:-~/.cache/ovmem-servers}/{hindsight,openviking}/venv (outside the repository).
# Idempotent: a venv whose installed version matches the pin is kept. Records what it installed in
# <dir>/<name>/installed.txt (pin, resolved version, python, seconds) and prints timings.
set -euo pipefail
dir="${OVMEM_SERVERS_DIR:-$HOME/.cache/ovmem-servers}"
python="${OVMEM_SERVERS_PYTHON:-python3}"
# Every other package each server needs is pinned too, in tests/servers/<name>.constraints.txt
# (what `pip freeze` listed in a venv the tests passed with): a dependency released later must not
# change what a brand-new machine installs (openai 3.x moved to httpx2, which refuses the
# httpx.Timeout Hindsight 1.1.0 hands it, and Hindsight stopped starting).
here="$(cd "$(dirname "$0")" && pwd)"
# name | pip requirement | distribution whose version proves the pin | entry point that must exist
pins=(
  "hindsight hindsight-api-slim[embedded-db]==1.1.0 hindsight-api-slim hindsight-api"
  "openviking openviking==0.5.2 openviking openviking-server"
)
only="${1:-all}"
total_start=$(date +%s)
pids=()
install_one() {
  local name=$1 req=$2 dist=$3 bin=$4
  local want=${req##*==} dest="$dir/$name" venv="$dir/$name/venv"
  local constraints="$here/$name.constraints.txt" sum have
  sum=$(sha256sum "$constraints" | cut -d' ' -f1)
  have=$("$venv/bin/python" -c "import importlib.metadata as m; print(m.version('$dist'))" 2>/dev/null || true)
  if [ "$have" = "$want" ] && [ -x "$venv/bin/$bin" ] && grep -qx "constraints=$sum" "$dest/installed.txt" 2>/dev/null; then
    echo "servers: $name $want already installed in $venv"
    return 0
  fi
  echo "servers: installing $req into $venv"
  local t0
  t0=$(date +%s)
  rm -rf "$venv" "$dest/installed.txt"
  mkdir -p "$dest"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -c "$constraints" "$req" >"$dest/pip.log" 2>&1 || {
    echo "servers: pip install $req failed; last lines of $dest/pip.log:" >&2
    tail -n 20 "$dest/pip.log" >&2
    return 1
  }
  have=$("$venv/bin/python" -c "import importlib.metadata as m; print(m.version('$dist'))")
  if [ "$have" != "$want" ]; then
    echo "servers: $dist resolved to $have, expected $want" >&2
    return 1
  fi
  local secs=$(($(date +%s) - t0))
  {
    echo "requirement=$req"
    echo "constraints=$sum"
    echo "version=$have"
    echo "python=$("$venv/bin/python" -c 'import sys; print(sys.version.split()[0])')"
    echo "seconds=$secs"
    echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  } >"$dest/installed.txt"
  "$venv/bin/python" -m pip freeze >"$dest/freeze.txt" 2>/dev/null || true
  echo "servers: $name $have installed in ${secs}s"
}
# The two installs run in parallel: each is mostly download and unpack, and together they finish
# sooner than one after the other even on 2 cores.
for pin in "${pins[@]}"; do
  read -r name req dist bin <<<"$pin"
  if [ "$only" != all ] && [ "$only" != "$name" ]; then continue; fi
  install_one "$name" "$req" "$dist" "$bin" &
  pids+=($!)
done
rc=0
for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
echo "servers: install finished in $(($(date +%s) - total_start))s (rc=$rc)"
exit $rc
