#!/usr/bin/env bash
# Installs the pinned harness CLIs the end-to-end tests run, from npm, into
# ${OVMEM_E2E_DIR:-~/.cache/ovmem-e2e}/<name> (outside the repository). Skips what is there.
set -euo pipefail
dir="${OVMEM_E2E_DIR:-$HOME/.cache/ovmem-e2e}"
pins=(
  "claude @anthropic-ai/claude-code@2.1.197 claude"
  "codex @openai/codex@0.171.0 codex"
  "cline cline@3.0.65 cline"
  "gemini @google/gemini-cli@0.61.0 gemini"
)
for pin in "${pins[@]}"; do
  read -r name pkg bin <<<"$pin"
  want="${pkg##*@}"
  dest="$dir/$name"
  have=$(node -e "try{console.log(require('$dest/node_modules/${pkg%@*}/package.json').version)}catch(e){}" 2>/dev/null || true)
  if [ "$have" = "$want" ] && [ -x "$dest/node_modules/.bin/$bin" ]; then
    echo "e2e: $pkg already installed"
    continue
  fi
  echo "e2e: installing $pkg into $dest"
  mkdir -p "$dest"
  # Run from the target directory: `npm install cline` next to a folder named cline installs the folder.
  (cd "$dest" && npm install --no-audit --no-fund --loglevel=error --prefix . "$pkg")
done
