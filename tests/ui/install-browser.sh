#!/usr/bin/env bash
# Chromium and its WebDriver, from Debian, for the viewer's browser tests (tests/ui.rs).
# Idempotent: does nothing when both are installed.
set -euo pipefail
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "tests/ui/install-browser.sh: apt-get needs root; install the Debian packages chromium and chromium-driver" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium chromium-driver >/dev/null
chromium --version
chromedriver --version
