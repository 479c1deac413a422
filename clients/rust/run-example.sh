#!/usr/bin/env bash
# Runs the Rust client crate's example (examples/play.rs) against a fresh `arbiter serve` on a
# free loopback port, as a new integrator would: ARBITER_ADDR names the server, and the example's
# last line must be the game's result. CI runs it with the release builds:
#   bash clients/rust/run-example.sh target/release/arbiter target/release/examples/play
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
arbiter="${1:-$root/target/release/arbiter}"
example="${2:-$root/target/release/examples/play}"
for f in "$arbiter" "$example"; do
  [ -x "$f" ] || { echo "run-example: $f is missing (cargo test --workspace --release --no-run builds both)" >&2; exit 1; }
done
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log="$root/target/rust-example-serve.log"
"$arbiter" serve --listen "127.0.0.1:$port" > "$log" 2>&1 &
server=$!
trap 'kill -TERM $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done
out="$root/target/rust-example.out"
ARBITER_ADDR="127.0.0.1:$port" timeout 120 "$example" | tee "$out"
last=$(tail -n 1 "$out")
if ! [[ "$last" =~ ^(1-0|0-1|1/2-1/2) ]]; then
  echo "run-example: the last line is not a result: '$last'" >&2
  exit 1
fi
kill -TERM $server
wait $server
trap - EXIT
echo "the Rust client example played a game to its end: $last"
