#!/bin/bash
# Instructions per streamed delta, repeatable on a loaded machine: one server under valgrind's callgrind, the
# stand-in CLI (not traced) on PATH as `claude`; phases of K completions with 10 and 60 deltas each, counters
# dumped per phase. (60-delta phase - 10-delta phase) / (K * 50) is the cost of one delta from the CLI's
# line to the socket write, all threads; the optimizing compiler's share is printed apart.
#   bench/model-provider/_callgrind-deltas.sh provider out/services/model-provider.mjs   (after a build)
#   bench/model-provider/_callgrind-deltas.sh peer node_modules/claude-max-api-proxy/dist/server/standalone.js
# PHASES (default 10x20,60x20,60x20; `plain` for whole completions), WARMUP (default 4) and STREAM (default
# deltas, the provider's MODELPROV_STREAM) change what is measured: PHASES=plain,plain WARMUP=30 gives the
# instructions of one whole completion.
set -euo pipefail
kind=$1; entry=$(realpath "$2"); rounds=${3:-6}
root=$(cd "$(dirname "$0")/../.." && pwd); work=$(mktemp -d); port=$((20000 + RANDOM % 20000))
mkdir -p "$work/bin" "$work/runs" "$work/data" "$work/cwd"
printf '#!/bin/sh\nexport STANDIN_RECORD_DIR=%s\nexec %s %s "$@"\n' "$work/runs" "$(command -v node)" "$root/services/model-provider/test-support/stand-in-cli.mjs" > "$work/bin/claude"
chmod +x "$work/bin/claude"
args=("$entry"); probe=/ready
if [ "$kind" = peer ]; then args+=("$port"); probe=/health; fi
cd "$work/cwd"
PATH="$work/bin:$PATH" MODELPROV_PORT=$port MODELPROV_DATA_DIR="$work/data" MODELPROV_STREAM=${STREAM:-deltas} MODELPROV_LOG_LEVEL=info \
  valgrind --tool=callgrind --smc-check=all-non-file --callgrind-out-file="$work/cg.%p" node "${args[@]}" > "$work/server.log" 2>&1 &
server=$!
for _ in $(seq 1 600); do [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port$probe")" = 200 ] && break; sleep 1; done
node "$root/bench/model-provider/_callgrind-driver.ts" "http://127.0.0.1:$port" "$server" "$rounds" "${PHASES:-10x20,60x20,60x20}"
kill "$server"; wait "$server" || true
for f in "$work"/cg.*.[0-9]; do
  total=$(grep '^summary:' "$f" | awk '{print $2}')
  compile=$(callgrind_annotate --threshold=100 --inclusive=yes "$f" 2>/dev/null | grep -m1 'OptimizingCompileDispatcher::CompileTask::RunInternal' | awk '{gsub(",","",$1); print $1}' || true)
  echo "$kind $(grep -m1 '^desc: Trigger' "$f" | sed 's/desc: Trigger: dump //'): $rounds completions, instructions $total, of which optimizing compiler ${compile:-0}"
done
rm -rf "$work"
