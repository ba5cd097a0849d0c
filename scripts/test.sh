#!/usr/bin/env bash
# The project's test command (README): every test of every crate, with every store
# feature, against real servers started here on 127.0.0.1:
#   - throwaway PostgreSQL and Redis (scripts/services.sh; Debian packages) for the
#     session-store conformance suite;
#   - a real small model behind llama.cpp's OpenAI-compatible server
#     (scripts/local-llm.sh; PyPI packages, pinned and hashed) for the providers'
#     end-to-end tests;
#   - Debian's Chromium and ChromeDriver (scripts/browser.sh) for the web chat's
#     browser test.
# Both are stopped on exit. In CI (CI=true) a server that cannot start fails the run;
# elsewhere the suites that need it report "skipped" instead.
set -euo pipefail
cd "$(dirname "$0")/.."
rustup toolchain install >/dev/null 2>&1 || true

cleanup() {
  bash scripts/services.sh stop >/dev/null 2>&1 || true
  bash scripts/local-llm.sh stop >/dev/null 2>&1 || true
}
trap cleanup EXIT

required() {
  if [ "${CI:-}" = "true" ]; then
    echo "test.sh: $1 could not start; CI needs it" >&2
    exit 1
  fi
  echo "test.sh: $1 could not start; the tests that need it will report skipped" >&2
}

echo "== services (PostgreSQL, Redis)" >&2
if lines="$(bash scripts/services.sh start)"; then
  eval "$lines"
else
  required "PostgreSQL/Redis"
fi

echo "== local model (llama.cpp server + Gemma 3 270M)" >&2
if lines="$(bash scripts/local-llm.sh start)"; then
  eval "$lines"
  export OPENAI_BASE_URL OPENAI_API_KEY OPENAI_MODEL
else
  required "the local model server"
fi

echo "== headless Chromium + ChromeDriver (web chat browser test)" >&2
if ! bash scripts/browser.sh >&2; then
  required "Chromium"
fi

echo "== cargo test --workspace --all-features" >&2
cargo test --workspace --all-features
