#!/usr/bin/env bash
# The cost of metrics (docs/performance.md, "Metrics on against off"): rules ValidateMove
# throughput (`arbiter bench rules`) and bughouse moves/s through Redis (`arbiter bench matches`),
# each with the server run as its own process without and with --metrics-listen, in interleaved
# pairs (the order alternates). Needs the release binaries with the bench feature:
#
#   cargo test --workspace --release --no-run
#   cargo build --release -p arbiter-cli --features bench
#   PAIRS=5 bash tools/metrics-cost.sh
#
# and Debian's redis-server on the PATH (an in-memory one on port 16399 is started and stopped).
set -euo pipefail
cd "$(dirname "$0")/.."
R=${TARGET_DIR:-target}/release
PAIRS=${PAIRS:-5}
redis-server --port 16399 --save "" --appendonly no --daemonize yes --logfile /tmp/mc-redis.log
trap 'redis-cli -p 16399 shutdown nosave >/dev/null 2>&1 || true; kill $(jobs -p) 2>/dev/null || true' EXIT
sleep 0.5
run_rules() { # $1: on|off
  local extra=()
  [ "$1" = on ] && extra=(--metrics-listen 127.0.0.1:9161)
  "$R/arbiter-rules" --listen 127.0.0.1:50161 "${extra[@]}" >/dev/null 2>&1 &
  local pid=$!
  sleep 0.5
  "$R/arbiter" bench rules --addr http://127.0.0.1:50161 --duration-secs 4 2>&1 | grep -E "^unary validate|^stream validate" | sed "s/^/rules $1: /"
  kill $pid; wait $pid 2>/dev/null || true
}
run_matches() {
  local extra=()
  [ "$1" = on ] && extra=(--metrics-listen 127.0.0.1:9162)
  redis-cli -p 16399 flushall >/dev/null
  "$R/arbiter-matches" --listen 127.0.0.1:50162 --redis-url redis://127.0.0.1:16399 \
    --seat-key a-seat-key-of-at-least-thirty-two-bytes "${extra[@]}" >/dev/null 2>&1 &
  local pid=$!
  sleep 1
  "$R/arbiter" bench matches --addr http://127.0.0.1:50162 --variant bughouse --matches 64 --duration-secs 5 2>&1 | grep -E "^bughouse" | sed "s/^/matches $1: /"
  kill $pid; wait $pid 2>/dev/null || true
}
for i in $(seq "$PAIRS"); do
  if [ $((i % 2)) = 1 ]; then run_rules off; run_rules on; else run_rules on; run_rules off; fi
done
for i in $(seq "$PAIRS"); do
  if [ $((i % 2)) = 1 ]; then run_matches off; run_matches on; else run_matches on; run_matches off; fi
done
