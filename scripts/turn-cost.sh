#!/usr/bin/env bash
# turn-cost.sh — the deterministic cost gate of a turn: instructions per turn of the
# `turn` bench's scripts 1, 2 and 3 (one flow; two flows; two flows and a signal, on an
# instant scripted model profiled as capable) and of script 1 on the same model profiled
# as small (`1s`), counted by valgrind's callgrind, against the budgets in
# agent-core/benches/turn-budget.txt. Instruction counts do not depend on what else
# the machine runs, so a change that multiplies a turn's cost cannot land unnoticed.
#
#   bash scripts/turn-cost.sh          # measure, print, fail (exit 1) above a budget
#   TURNS=2000 bash scripts/turn-cost.sh
#
# Per turn = (count of TURNS turns - count of 0 turns) / TURNS: start-up is left out.
# valgrind comes from Debian's package, installed when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
TURNS="${TURNS:-1000}"
BUDGETS="agent-core/benches/turn-budget.txt"
log() { echo "[turn-cost] $*" >&2; }

if ! command -v valgrind >/dev/null 2>&1; then
  log "installing valgrind (Debian package)"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get install -y -qq valgrind >/dev/null 2>&1 || {
    $SUDO apt-get update -qq >/dev/null && $SUDO apt-get install -y -qq valgrind >/dev/null
  }
fi

log "building the turn bench"
bin="$(cargo bench -p agent-core --bench turn --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("target", {}).get("name") == "turn" and m.get("executable"):
        print(m["executable"])' | tail -n 1)"
[ -x "$bin" ] || { log "error: no turn bench binary"; exit 1; }

count() {   # instructions of N turns of script S (a trailing `s`: the small profile)
  local model=capable; case "$2" in *s) model=small ;; esac
  TURN_PROFILE="$1" TURN_PROFILE_SCRIPT="${2%s}" TURN_PROFILE_MODEL="$model" valgrind --tool=callgrind \
    --callgrind-out-file=/dev/null "$bin" 2>&1 \
    | sed -n 's/.*Collected : \([0-9]*\).*/\1/p' | tail -n 1
}

status=0
printf '%-8s %14s %14s %8s\n' script "instr/turn" budget ratio
for script in 1 2 3 1s; do
  base="$(count 0 "$script")"; full="$(count "$TURNS" "$script")"
  [ -n "$base" ] && [ -n "$full" ] || { log "error: callgrind printed no count"; exit 1; }
  per=$(( (full - base) / TURNS ))
  budget="$(awk -v s="$script" '$1 == s { print $2 }' "$BUDGETS")"
  [ -n "$budget" ] || { log "error: no budget for script $script in $BUDGETS"; exit 1; }
  ratio="$(awk -v p="$per" -v b="$budget" 'BEGIN { printf "%.2f", p / b }')"
  printf '%-8s %14s %14s %8s\n' "$script" "$per" "$budget" "$ratio"
  if [ "$per" -gt "$budget" ]; then
    log "script $script costs $per instructions per turn, over its budget of $budget"
    status=1
  fi
done
exit "$status"
