#!/usr/bin/env bash
# protocols.sh — install (idempotently) the real clients the serving-protocol tests of the
# server example talk to, and Mermaid for the web chat's flow graph:
#
#   - the official `openai` Python package (PyPI), in a venv: examples/tests/protocols.rs
#     runs examples/tests/protocols/openai_client.py with it against POST /v1/chat/completions;
#   - the OpenAI Agents SDK (`openai-agents`, PyPI), in the same venv:
#     examples/tests/protocols/agents_sdk_client.py runs an Agent on its
#     OpenAIResponsesModel against POST /v1/responses;
#   - the official A2A SDK (`a2a-sdk`, PyPI), in a venv of its own: agent-core/tests/a2a.rs
#     runs agent-core/tests/a2a_client.py with it against the agent card and POST /a2a;
#   - `@ag-ui/client` (npm): examples/tests/protocols/agui_client.mjs uses its HttpAgent
#     against POST /agui;
#   - `mermaid` (npm): the server serves its dist/mermaid.min.js as /vendor/mermaid.min.js
#     and the page draws the flow graph with it (examples/tests/web_chat.rs checks the SVG).
#
# Usage: eval "$(bash scripts/protocols.sh)"
#   Progress goes to stderr; stdout is only `export NAME=VALUE` lines:
#     AGENT_OPENAI_PYTHON   a python3 that can `import openai` and `import agents`
#     AGENT_A2A_PYTHON      a python3 that can `import a2a` (the official A2A SDK)
#     AGENT_AGUI_NODE_PATH  a node_modules folder with @ag-ui/client (for NODE_PATH)
#     AGENT_MERMAID_JS      mermaid.min.js (the server example reads it from there)
# Env: PROTOCOLS_HOME (default ~/.cache/agent-protocols), PYTHON (default python3),
#   NPM (default npm). Versions are pinned below; a change of pin reinstalls.
# Needs python3 with venv, node >= 18 and npm; reaches PyPI and the npm registry only.
set -euo pipefail

OPENAI_VERSION="3.57.0"
# openai-agents 0.24.0 requires openai>=3.0.0,<4: it admits OPENAI_VERSION. Bump the two
# together, within that range.
OPENAI_AGENTS_VERSION="0.24.0"
# a2a-sdk 1.3.0 speaks A2A 1.0 (JSON-RPC methods SendMessage, SendStreamingMessage, GetTask).
A2A_SDK_VERSION="1.3.0"
AGUI_CLIENT_VERSION="1.0.0"
MERMAID_VERSION="11.17.2"

PROTOCOLS_HOME="${PROTOCOLS_HOME:-$HOME/.cache/agent-protocols}"
PY="${PYTHON:-python3}"
NPM="${NPM:-npm}"
log() { echo "[protocols] $*" >&2; }
die() { log "error: $*"; exit 1; }

mkdir -p "$PROTOCOLS_HOME"
PROTOCOLS_HOME="$(cd "$PROTOCOLS_HOME" && pwd)"
VENV="$PROTOCOLS_HOME/venv"
A2A_VENV="$PROTOCOLS_HOME/a2a-venv"
NODE_DIR="$PROTOCOLS_HOME/node"

# ------------------------------------------------------------------ openai, openai-agents (PyPI)
python_ok() {
  [ -x "$VENV/bin/python" ] &&
    [ "$("$VENV/bin/python" -c 'import openai, agents; print(openai.__version__, agents.__version__)' 2>/dev/null)" = "$OPENAI_VERSION $OPENAI_AGENTS_VERSION" ]
}
if python_ok; then
  log "openai $OPENAI_VERSION, openai-agents $OPENAI_AGENTS_VERSION: installed ($VENV)"
else
  command -v "$PY" >/dev/null || die "$PY not found (set PYTHON)"
  if [ ! -x "$VENV/bin/python" ]; then
    log "creating the venv $VENV"
    "$PY" -m venv "$VENV" >&2 || die "could not create a venv with $PY (python3-venv missing?)"
  fi
  log "installing openai==$OPENAI_VERSION and openai-agents==$OPENAI_AGENTS_VERSION from PyPI"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    "openai==$OPENAI_VERSION" "openai-agents==$OPENAI_AGENTS_VERSION" >&2 ||
    die "pip could not install openai==$OPENAI_VERSION and openai-agents==$OPENAI_AGENTS_VERSION"
  python_ok || die "openai $OPENAI_VERSION and openai-agents $OPENAI_AGENTS_VERSION do not import from $VENV"
  log "openai $OPENAI_VERSION, openai-agents $OPENAI_AGENTS_VERSION: installed"
fi

# ------------------------------------------------------------------ a2a-sdk (PyPI)
a2a_ok() {
  [ -x "$A2A_VENV/bin/python" ] &&
    [ "$("$A2A_VENV/bin/python" -c 'from importlib.metadata import version; import a2a.client; print(version("a2a-sdk"))' 2>/dev/null)" = "$A2A_SDK_VERSION" ]
}
if a2a_ok; then
  log "a2a-sdk $A2A_SDK_VERSION: installed ($A2A_VENV)"
else
  command -v "$PY" >/dev/null || die "$PY not found (set PYTHON)"
  if [ ! -x "$A2A_VENV/bin/python" ]; then
    log "creating the venv $A2A_VENV"
    "$PY" -m venv "$A2A_VENV" >&2 || die "could not create a venv with $PY (python3-venv missing?)"
  fi
  log "installing a2a-sdk==$A2A_SDK_VERSION from PyPI"
  "$A2A_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    "a2a-sdk==$A2A_SDK_VERSION" >&2 ||
    die "pip could not install a2a-sdk==$A2A_SDK_VERSION"
  a2a_ok || die "a2a-sdk $A2A_SDK_VERSION does not import from $A2A_VENV"
  log "a2a-sdk $A2A_SDK_VERSION: installed"
fi

# ------------------------------------------------------------------ @ag-ui/client, mermaid (npm)
node_version() { # the installed version of package $1, or nothing
  local pj="$NODE_DIR/node_modules/$1/package.json"
  [ -f "$pj" ] && node -e 'process.stdout.write(require(process.argv[1]).version)' "$pj" 2>/dev/null
}
node_ok() {
  [ "$(node_version @ag-ui/client)" = "$AGUI_CLIENT_VERSION" ] &&
    [ "$(node_version mermaid)" = "$MERMAID_VERSION" ] &&
    [ -s "$NODE_DIR/node_modules/mermaid/dist/mermaid.min.js" ]
}
if node_ok; then
  log "@ag-ui/client $AGUI_CLIENT_VERSION, mermaid $MERMAID_VERSION: installed ($NODE_DIR)"
else
  command -v node >/dev/null || die "node not found"
  command -v "$NPM" >/dev/null || die "$NPM not found"
  mkdir -p "$NODE_DIR"
  cat > "$NODE_DIR/package.json" <<EOF
{
  "name": "agent-protocols",
  "private": true,
  "description": "Clients for the server example's protocol tests (scripts/protocols.sh)",
  "dependencies": {
    "@ag-ui/client": "$AGUI_CLIENT_VERSION",
    "mermaid": "$MERMAID_VERSION"
  }
}
EOF
  log "installing @ag-ui/client@$AGUI_CLIENT_VERSION and mermaid@$MERMAID_VERSION from npm (node $(node --version))"
  (cd "$NODE_DIR" && "$NPM" install --no-audit --no-fund --loglevel=error --ignore-scripts >&2) ||
    die "npm could not install @ag-ui/client@$AGUI_CLIENT_VERSION and mermaid@$MERMAID_VERSION"
  node_ok || die "the npm packages are not where expected under $NODE_DIR/node_modules"
  log "@ag-ui/client $AGUI_CLIENT_VERSION, mermaid $MERMAID_VERSION: installed"
fi

q() { printf '%q' "$1"; }
echo "export AGENT_OPENAI_PYTHON=$(q "$VENV/bin/python")"
echo "export AGENT_A2A_PYTHON=$(q "$A2A_VENV/bin/python")"
echo "export AGENT_AGUI_NODE_PATH=$(q "$NODE_DIR/node_modules")"
echo "export AGENT_MERMAID_JS=$(q "$NODE_DIR/node_modules/mermaid/dist/mermaid.min.js")"
