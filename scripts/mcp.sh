#!/usr/bin/env bash
# mcp.sh — install (idempotently) the MCP reference server `@modelcontextprotocol/server-everything`
# from npm, for the MCP client tests of agent-core (tests/mcp.rs) and agent-providers
# (tests/e2e_mcp.rs), and print where it is:
#
#   eval "$(bash scripts/mcp.sh)"        # prints: export AGENT_MCP_EVERYTHING=<…/dist/index.js>
#
# The tests start it themselves with the machine's node (>= 18): `node $AGENT_MCP_EVERYTHING`
# serves MCP on stdio (the default transport); `PORT=<port> node $AGENT_MCP_EVERYTHING
# streamableHttp` serves streamable HTTP at http://127.0.0.1:<port>/mcp.
# Env: AGENT_MCP_HOME (default ~/.cache/agent-mcp), MCP_EVERYTHING_VERSION (pinned below).
# Progress goes to stderr; only the export line goes to stdout.
set -euo pipefail

VERSION="${MCP_EVERYTHING_VERSION:-2026.8.31}"
HOME_DIR="${AGENT_MCP_HOME:-$HOME/.cache/agent-mcp}"
DIR="$HOME_DIR/server-everything-$VERSION"
ENTRY="$DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
log() { echo "[mcp] $*" >&2; }
die() { log "error: $*"; exit 1; }

command -v node >/dev/null || die "node is not installed (apt-get install nodejs npm)"
command -v npm >/dev/null || die "npm is not installed (apt-get install npm)"
major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$major" -ge 18 ] || die "node $(node --version) is too old; server-everything needs node >= 18"

if [ -f "$DIR/.installed" ] && [ -f "$ENTRY" ]; then
  log "server-everything $VERSION already installed in $DIR"
else
  log "installing @modelcontextprotocol/server-everything@$VERSION into $DIR"
  mkdir -p "$DIR"
  rm -f "$DIR/.installed"
  [ -f "$DIR/package.json" ] || echo '{"name":"agent-mcp-servers","private":true}' >"$DIR/package.json"
  npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error --save-exact \
    "@modelcontextprotocol/server-everything@$VERSION" >&2
  [ -f "$ENTRY" ] || die "installed, but $ENTRY is missing"
  touch "$DIR/.installed"
  log "installed"
fi
echo "export AGENT_MCP_EVERYTHING=$(printf '%q' "$ENTRY")"
