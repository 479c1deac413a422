#!/usr/bin/env bash
# A platform's load on the compose topology, then the same load on `arbiter serve` alone, in
# one session (docs/performance.md, "The whole system under load"):
#
#   cargo test --workspace --release --no-run                 # the release binaries (images, serve)
#   cargo build --release -p arbiter-cli --features bench     # `arbiter` with its load generators
#   bash tools/system-load.sh                                 # about 15 minutes with the defaults
#
# For each target it starts `arbiter bench system` (games with clocks moved at an open-loop
# rate, a watcher on each, games left to flag, pool joins), and once the load runs samples each
# process's CPU and resident memory twice: 15 s after the load began and 15 s before it ends
# (containers: `docker stats`; `arbiter serve` and the bench: /proc over 5 s). Then it prints
# the bench's report. The topology is taken down at the end, on failure too.
#
# Environment: GAMES (2000), SECS (300), FLAGS (200), JOINS (2 players/s), TC (10+5),
# SERVE_PORT (50200). Not part of `cargo test` or CI: it is a measurement.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

GAMES="${GAMES:-2000}"
SECS="${SECS:-300}"
FLAGS="${FLAGS:-200}"
JOINS="${JOINS:-2}"
TC="${TC:-10+5}"
SERVE_PORT="${SERVE_PORT:-50200}"
ARBITER=target/release/arbiter
COMPOSE=(docker-compose -p arbiterload -f deploy/compose.yaml)
"$ARBITER" bench --help >/dev/null 2>&1 || {
  echo "system-load: build first: cargo test --workspace --release --no-run, then" \
    "cargo build --release -p arbiter-cli --features bench" >&2
  exit 1
}
say() { echo "system-load: $*"; }

# cpu_of PID: the CPU the process used over 5 s, in % of one core.
cpu_of() {
  local a b
  a=$(awk '{print $14 + $15}' "/proc/$1/stat")
  sleep 5
  b=$(awk '{print $14 + $15}' "/proc/$1/stat")
  echo "$(((b - a) * 100 / $(getconf CLK_TCK) / 5))%"
}
rss_of() { echo "$(($(awk '/VmRSS/ {print $2}' "/proc/$1/status") / 1024)) MiB"; }

# bench ADDR LABEL SAMPLER: runs the bench, calling SAMPLER with "start" and "end" at the
# sampling instants; prints the report.
bench() {
  local addr="$1" label="$2" sampler="$3" out
  out="$(mktemp)"
  "$ARBITER" bench system --addr "$addr" --games "$GAMES" --duration-secs "$SECS" \
    --flags "$FLAGS" --joins-per-sec "$JOINS" --time-control "$TC" \
    ${PLATFORM_TOKEN:+--platform-token "$PLATFORM_TOKEN"} ${CA_FILE:+--tls-ca-file "$CA_FILE"} >"$out" 2>&1 &
  local pid=$!
  until grep -q "load started" "$out" 2>/dev/null; do
    kill -0 "$pid" 2>/dev/null || {
      cat "$out"
      return 1
    }
    sleep 1
  done
  say "$label: $(grep 'load started' "$out")"
  sleep 15
  "$sampler" start "$pid"
  sleep $((SECS - 35))
  "$sampler" end "$pid"
  wait "$pid" || {
    cat "$out"
    return 1
  }
  say "$label: report"
  cat "$out"
  rm -f "$out"
}

containers() {
  say "topology at the $1 of the load (bench: $(cpu_of "$2") CPU, $(rss_of "$2")):"
  docker stats --no-stream --format '  {{.Name}}: {{.CPUPerc}} CPU, {{.MemUsage}}' \
    $("${COMPOSE[@]}" ps -q) | sed 's/ \/ [0-9.]*[A-Za-z]*$//'
}

serve_sampler() {
  say "arbiter serve at the $1 of the load: $(cpu_of "$SERVE_PID") CPU, $(rss_of "$SERVE_PID") (bench: $(cpu_of "$2") CPU, $(rss_of "$2"))"
}

cleanup() {
  "${COMPOSE[@]}" down -v --remove-orphans >/dev/null 2>&1 || true
  [ -n "${SERVE_PID:-}" ] && kill "$SERVE_PID" 2>/dev/null || true
}
trap cleanup EXIT

# --- the compose topology, through its proxy -------------------------------------------------
bash deploy/dev-secrets.sh >/dev/null
bash deploy/build-images.sh | tail -1
"${COMPOSE[@]}" down -v --remove-orphans >/dev/null 2>&1 || true
"${COMPOSE[@]}" up -d 2>/dev/null
for _ in $(seq 90); do
  unhealthy=$(for id in $("${COMPOSE[@]}" ps -q); do docker inspect -f '{{.State.Health.Status}}' "$id"; done | grep -vcx healthy || true)
  [ "$unhealthy" = 0 ] && break
  sleep 1
done
# The topology checks API keys and speaks TLS (deploy/dev-secrets.sh made both).
PLATFORM_TOKEN="$(cat deploy/secrets/platform-key)"
CA_FILE=deploy/secrets/ca.pem
say "topology healthy; load through the proxy on 127.0.0.1:50100"
bench https://127.0.0.1:50100 topology containers
"${COMPOSE[@]}" down -v --remove-orphans >/dev/null 2>&1

# --- arbiter serve alone ---------------------------------------------------------------------
PLATFORM_TOKEN=""
CA_FILE=""
"$ARBITER" serve --listen "127.0.0.1:$SERVE_PORT" >/tmp/system-load-serve.log 2>&1 &
SERVE_PID=$!
say "arbiter serve on 127.0.0.1:$SERVE_PORT (pid $SERVE_PID)"
bench "http://127.0.0.1:$SERVE_PORT" serve serve_sampler
