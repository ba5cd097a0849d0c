#!/usr/bin/env bash
# Install headless Chromium and its WebDriver (Debian packages `chromium` and
# `chromium-driver`) for the browser test of the web chat example
# (examples/tests/web_chat.rs). Idempotent: does nothing when both are installed.
set -euo pipefail

packages=(chromium chromium-driver)

if [ "$(id -u)" -eq 0 ]; then
    sudo=()
else
    sudo=(sudo)
fi

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

if [ "${#missing[@]}" -gt 0 ]; then
    echo "browser.sh: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    install=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}")
    if ! "${install[@]}"; then
        # The package lists may be missing or stale: refresh them once and retry.
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
        "${install[@]}"
    fi
fi

chromium --version
chromedriver --version
