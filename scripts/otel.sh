#!/usr/bin/env bash
# otel.sh — install (idempotently) the OTLP receiver's Python environment for the
# OpenTelemetry test of agent-core (tests/otel.rs, feature `otel`), and print where it is:
#
#   eval "$(bash scripts/otel.sh)"       # prints: export AGENT_OTEL_PYTHON=<venv>/bin/python
#   cargo test -p agent-core --features otel --test otel
#
# Neither the OpenTelemetry Collector nor Jaeger installs from the package registries
# this project reaches (Debian, PyPI, npm, crates.io), so the test's receiver
# (agent-core/tests/otel_receiver.py) decodes OTLP/HTTP with the official protocol
# definitions: PyPI's `opentelemetry-proto` (generated from
# open-telemetry/opentelemetry-proto) on `protobuf`, both pinned below.
# Env: AGENT_OTEL_HOME (default ~/.cache/agent-otel), OTEL_PROTO_VERSION, PROTOBUF_VERSION.
# Progress goes to stderr; only the export line goes to stdout.
set -euo pipefail

PROTO_VERSION="${OTEL_PROTO_VERSION:-1.45.2}"
PROTOBUF_VERSION="${PROTOBUF_VERSION:-6.33.6}"
HOME_DIR="${AGENT_OTEL_HOME:-$HOME/.cache/agent-otel}"
VENV="$HOME_DIR/venv-proto-$PROTO_VERSION-pb-$PROTOBUF_VERSION"
PY="$VENV/bin/python"
log() { echo "[otel] $*" >&2; }
die() { log "error: $*"; exit 1; }

command -v python3 >/dev/null || die "python3 is not installed (apt-get install python3 python3-venv)"

check() {
  "$PY" - <<'EOF' >/dev/null 2>&1
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
trace_service_pb2.ExportTraceServiceRequest()
metrics_service_pb2.ExportMetricsServiceRequest()
EOF
}

if [ -f "$VENV/.installed" ] && [ -x "$PY" ] && check; then
  log "opentelemetry-proto $PROTO_VERSION already installed in $VENV"
else
  log "installing opentelemetry-proto==$PROTO_VERSION protobuf==$PROTOBUF_VERSION into $VENV"
  rm -rf "$VENV"
  mkdir -p "$HOME_DIR"
  if ! python3 -m venv "$VENV" >&2; then
    log "python3 -m venv failed; installing python3-venv"
    rm -rf "$VENV"
    apt-get install -y python3-venv >&2 || die "could not install python3-venv"
    python3 -m venv "$VENV" >&2
  fi
  "$PY" -m pip install --quiet --disable-pip-version-check \
    "opentelemetry-proto==$PROTO_VERSION" "protobuf==$PROTOBUF_VERSION" >&2
  check || die "installed, but the OTLP trace and metrics definitions do not import"
  touch "$VENV/.installed"
  log "installed"
fi
echo "export AGENT_OTEL_PYTHON=$PY"
