#!/usr/bin/env bash
# The project's test command (README): every test of every crate, with every store
# feature, against real servers started here on 127.0.0.1:
#   - throwaway PostgreSQL and Redis (scripts/services.sh; Debian packages) for the
#     session-store conformance suite;
#   - real small models behind llama.cpp's OpenAI-compatible server
#     (scripts/local-llm.sh; PyPI packages, pinned and hashed): Gemma 3 270M on port
#     18081 (LLM_GEMMA_PORT) for the providers' end-to-end tests (fast, and its template returns tool
#     calls), and the local default model (Qwen2.5-Coder 1.5B Instruct) on 18080 for the
#     eval's smoke subset, which fails the run on engine faults only (a panic, a hang,
#     an engine error on a usable answer, a broken protocol), never on answer quality;
#   - Debian's Chromium and ChromeDriver (scripts/browser.sh) for the web chat's
#     browser test;
#   - the integrations' real counterparts (issue 17): the MCP reference server
#     `@modelcontextprotocol/server-everything` (scripts/mcp.sh, npm), a Python OTLP
#     receiver decoding with PyPI's `opentelemetry-proto` (scripts/otel.sh), the
#     official `openai` Python client, `@ag-ui/client` and Mermaid
#     (scripts/protocols.sh, PyPI and npm).
# Both are stopped on exit. In CI (CI=true) a server that cannot start fails the run;
# elsewhere the suites that need it report "skipped" instead.
set -euo pipefail
cd "$(dirname "$0")/.."
rustup toolchain install >/dev/null 2>&1 || true

cleanup() {
  bash scripts/services.sh stop >/dev/null 2>&1 || true
  bash scripts/local-llm.sh stop-all >/dev/null 2>&1 || true
}
trap cleanup EXIT
stage() { echo "== $1 (test.sh at $((SECONDS / 60))m$((SECONDS % 60))s)" >&2; }

required() {
  if [ "${CI:-}" = "true" ]; then
    echo "test.sh: $1 could not start; CI needs it" >&2
    exit 1
  fi
  echo "test.sh: $1 could not start; the tests that need it will report skipped" >&2
}

stage "services (PostgreSQL, Redis)"
if lines="$(bash scripts/services.sh start)"; then
  eval "$lines"
else
  required "PostgreSQL/Redis"
fi

stage "local models (llama.cpp server: the default model, and Gemma 3 270M)"
local_default=0
if bash scripts/local-llm.sh start >/dev/null; then
  local_default=1
else
  required "the local default model"
fi
if lines="$(LOCAL_MODEL=gemma-3-270m LLM_PORT="${LLM_GEMMA_PORT:-18081}" bash scripts/local-llm.sh start)"; then
  eval "$lines"
  export OPENAI_BASE_URL OPENAI_API_KEY OPENAI_MODEL
else
  required "the local Gemma model"
fi

stage "headless Chromium + ChromeDriver (web chat browser test)"
if ! bash scripts/browser.sh >&2; then
  required "Chromium"
fi

stage "integration counterparts (MCP reference server, OTLP decoder, openai and AG-UI clients, Mermaid)"
# Each prints `export NAME=VALUE` lines the tests read (their READMEs say which);
# PyPI and npm packages, pinned, cached under ~/.cache.
for counterpart in mcp otel protocols; do
  if lines="$(bash "scripts/$counterpart.sh")"; then
    eval "$lines"
  else
    required "scripts/$counterpart.sh"
  fi
done

stage "cargo test --workspace --all-features"
cargo test --workspace --all-features

if [ "$local_default" = 1 ]; then
  stage "eval: smoke subset on the local default model (fails on engine faults only)"
  # The eval picks its model like the examples: with no key or base URL set, the local
  # default model, which is running already. The Gemma variables above are for the
  # providers' tests only.
  env -u OPENAI_API_KEY -u OPENAI_BASE_URL -u OPENAI_MODEL \
    cargo run -p examples --example eval -- --smoke --out target/eval-smoke
fi
stage "done"
