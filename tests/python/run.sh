#!/usr/bin/env bash
# Generates a Python client from proto/ with grpcio-tools, starts `arbiter serve` on a free
# loopback port, and calls every RPC of the rules service, and plays hosted games of the match
# service (chess, Glinski, bughouse, a game lost on time), the clock service (Sync, a
# standalone clock), matchmaking (two players matched, playing, rated) and the analysis service
# (a MultiPV stream, best moves), through that client.
# Then checks `arbiter uci` with python-chess's engine module (tests/python/uci.py).
# Needs python3 (with venv) and the release binary target/release/arbiter (`cargo build --release
# -p arbiter-cli`, or `cargo test --workspace --release --no-run`, which CI uses).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="$root/target/pyvenv"
gen="$root/target/python-gen"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -c "import grpc, grpc_tools, chess" 2>/dev/null \
  || "$venv/bin/pip" install --quiet "grpcio>=1.60" "grpcio-tools>=1.60" "chess>=1.10"
rm -rf "$gen" && mkdir -p "$gen"
"$venv/bin/python" -m grpc_tools.protoc -I "$root/proto" --python_out="$gen" --grpc_python_out="$gen" \
  "$root/proto/arbiter/common/v1/common.proto" "$root/proto/arbiter/rules/v1/rules.proto" \
  "$root/proto/arbiter/matches/v1/matches.proto" "$root/proto/arbiter/clock/v1/clock.proto" \
  "$root/proto/arbiter/matchmaking/v1/matchmaking.proto" "$root/proto/arbiter/analysis/v1/analysis.proto"
port=$("$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$root/target/release/arbiter" serve --listen "127.0.0.1:$port" --mm-wave-interval-ms 200 > "$root/target/python-serve.log" 2>&1 &
server=$!
trap 'kill -TERM $server 2>/dev/null || true' EXIT
PYTHONPATH="$gen" "$venv/bin/python" "$root/tests/python/client.py" "127.0.0.1:$port"
kill -TERM $server
wait $server
trap - EXIT
echo "arbiter serve stopped cleanly on SIGTERM"
"$venv/bin/python" "$root/tests/python/uci.py" "$root/target/release/arbiter"
