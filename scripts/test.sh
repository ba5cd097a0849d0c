#!/usr/bin/env bash
# The project's test command (README): every crate's unit, integration and doc tests.
set -euo pipefail
cd "$(dirname "$0")/.."
rustup toolchain install >/dev/null 2>&1 || true
cargo test --workspace
