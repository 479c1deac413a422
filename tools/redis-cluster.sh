#!/usr/bin/env bash
# A Redis Cluster of three primaries and three replicas on loopback, from this machine's
# redis-server (Debian: apt-get install redis-server), and a single Redis with the same
# settings, for the measurements in docs/performance.md ("The match service on a Redis
# Cluster"). The tests make their own clusters (tools/testkit); this is for benches by hand.
#
#   bash tools/redis-cluster.sh start [BASE]    # nodes on BASE..BASE+5 (default 7001); prints the URL
#   bash tools/redis-cluster.sh single [PORT]   # one Redis, same persistence (default 6390); prints the URL
#   bash tools/redis-cluster.sh stop [BASE|PORT]
#
# Every node: append-only file fsynced every second, no RDB snapshots, automatic AOF rewrites
# off (docs/operations.md: they put tens of ms on the slowest moves), 2 s node timeout.
set -euo pipefail

cmd="${1:-start}"
case "$cmd" in
  start) base="${2:-7001}" ;;
  single) base="${2:-6390}" ;;
  stop) base="${2:-7001}" ;;
  *) echo "usage: $0 start|single|stop [PORT]" >&2; exit 2 ;;
esac
dir="${TMPDIR:-/tmp}/arbiter-redis-$base"

node() { # port, extra args...
  local p="$1"
  shift
  mkdir -p "$dir/$p"
  redis-server --port "$p" --bind 127.0.0.1 --protected-mode no \
    --appendonly yes --appendfsync everysec --auto-aof-rewrite-percentage 0 --save '' \
    --dir "$dir/$p" --logfile redis.log --daemonize yes --pidfile "$dir/$p/redis.pid" "$@"
  for _ in $(seq 100); do
    redis-cli -p "$p" ping >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "redis-server on $p did not start (see $dir/$p/redis.log)" >&2
  exit 1
}

case "$cmd" in
  single)
    node "$base"
    echo "redis://127.0.0.1:$base"
    ;;
  start)
    nodes=()
    for i in 0 1 2 3 4 5; do
      p=$((base + i))
      node "$p" --cluster-enabled yes --cluster-config-file nodes.conf \
        --cluster-node-timeout 2000 --cluster-port $((p + 10000))
      nodes+=("127.0.0.1:$p")
    done
    redis-cli --cluster create "${nodes[@]}" --cluster-replicas 1 --cluster-yes >"$dir/create.log"
    for _ in $(seq 300); do
      ok=1
      for i in 0 1 2 3 4 5; do
        redis-cli -p $((base + i)) cluster info | grep -q 'cluster_state:ok' || ok=0
      done
      [ "$ok" = 1 ] && break
      sleep 0.1
    done
    [ "$ok" = 1 ] || { echo "the cluster did not form (see $dir)" >&2; exit 1; }
    (IFS=,; echo "redis+cluster://${nodes[*]}")
    ;;
  stop)
    for pidfile in "$dir"/*/redis.pid; do
      [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
    done
    sleep 0.5
    rm -rf "$dir"
    ;;
esac
