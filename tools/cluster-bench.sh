#!/usr/bin/env bash
# The match service on a Redis Cluster against one Redis, same machine, same run
# (docs/performance.md, "The match service on a Redis Cluster"):
#
#   cargo build --release -p arbiter-cli --features bench
#   bash tools/cluster-bench.sh [ROUNDS] [SECONDS]     # default 2 rounds of 10 s per store and variant
#
# Starts one Redis (port 6390) and a cluster of three primaries and three replicas (7001-7006)
# with the same persistence (tools/redis-cluster.sh), then, round by round, alternating the two
# stores, drives `arbiter bench matches` (64 matches, random legal moves) for bughouse and chess,
# and reads each Redis process's CPU time before and after (INFO cpu): moves per second, and
# Redis CPU per move in all and on the busiest primary. Then `arbiter bench clocks` on each
# store (flag detection with the deadline index in one key, or in 32 group keys). Stops the
# servers at the end.
#
#   BASELINE=/path/to/an/older/arbiter bash tools/cluster-bench.sh ...
#
# also measures that binary on the cluster in every round (rows `cluster-baseline`), and its
# `bench clocks` on the cluster, to compare a change against the build before it in one run.
# The runs of a round go in turn, in reverse order every second round.
set -euo pipefail
baseline=""
if [ -n "${BASELINE:-}" ]; then
  baseline=$(realpath "$BASELINE") # before the cd: relative to the caller's directory
  [ -x "$baseline" ] || { echo "BASELINE is not an executable: $BASELINE" >&2; exit 1; }
fi
cd "$(dirname "$0")/.."
rounds="${1:-2}"
secs="${2:-10}"
bin=target/release/arbiter
[ -x "$bin" ] || { echo "build it first: cargo build --release -p arbiter-cli --features bench" >&2; exit 1; }

single=$(bash tools/redis-cluster.sh single 6390)
cluster=$(bash tools/redis-cluster.sh start 7001)
trap 'bash tools/redis-cluster.sh stop 6390; bash tools/redis-cluster.sh stop 7001' EXIT

cpu() { # port: seconds of CPU the server has used
  redis-cli -p "$1" info cpu | awk -F: '/^used_cpu_(sys|user):/ {s += $2} END {printf "%.3f", s}'
}
ports_of() { # url: the ports of its Redis processes
  case "$1" in
    redis://*) echo 6390 ;;
    *) echo 7001 7002 7003 7004 7005 7006 ;;
  esac
}

echo "store variant moves/s redis_cpu_ms_per_1000_moves busiest_node_cpu_ms_per_1000_moves"
# Each round's runs: name, URL, binary; the order is reversed every second round, so that a
# drift of the machine's speed across the run weighs on each run alike.
runs=("one $single $bin" "cluster $cluster $bin")
[ -z "$baseline" ] || runs+=("cluster-baseline $cluster $baseline")

for round in $(seq "$rounds"); do
  order=("${runs[@]}")
  if [ $((round % 2)) -eq 0 ]; then
    order=()
    for ((i = ${#runs[@]} - 1; i >= 0; i--)); do order+=("${runs[$i]}"); done
  fi
  for run in "${order[@]}"; do
    read -r name url exe <<<"$run"
    for variant in bughouse chess; do
      declare -A before=()
      for p in $(ports_of "$url"); do before[$p]=$(cpu "$p"); done
      out=$("$exe" bench matches --redis-url "$url" --variant "$variant" --duration-secs "$secs" 2>&1)
      # The report's row: variant store matches clients moves moves/s p50 p99 finished retries errors.
      row=$(echo "$out" | grep -E "^$variant " | tail -1)
      moves=$(echo "$row" | awk '{print $5}')
      rate=$(echo "$row" | awk '{print $6}')
      total=0 busiest=0
      for p in $(ports_of "$url"); do
        used=$(echo "$(cpu "$p") - ${before[$p]}" | bc -l)
        total=$(echo "$total + $used" | bc -l)
        busiest=$(echo "if ($used > $busiest) $used else $busiest" | bc -l)
      done
      printf "%s %s %s %.1f %.1f   (round %s: %s)\n" "$name" "$variant" "$rate" \
        "$(echo "$total * 1000000 / $moves" | bc -l)" "$(echo "$busiest * 1000000 / $moves" | bc -l)" \
        "$round" "$(echo "$row" | awk '{print "p50", $7, "p99", $8, "retries", $10, "errors", $11}')"
      echo "$out" | sed 's/^/    /' >>"${TMPDIR:-/tmp}/cluster-bench-$name-$variant.log"
    done
  done
done

for run in "${runs[@]}"; do
  read -r name url exe <<<"$run"
  echo "== bench clocks on $name"
  "$exe" bench clocks --redis-url "$url" --duration-secs 20 --games 4000 --rate 1000 --flags 300
done
