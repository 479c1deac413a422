#!/usr/bin/env bash
# CI entry point of the Python client (clients/python).
#
#   bash clients/python/run-tests.sh [ARBITER_BINARY]     # default: target/release/arbiter
#
# Makes a fresh venv (target/pyclient-venv), builds the wheel with
# `pip wheel ./clients/python -w target/pyclient-wheel` (the stubs are generated from proto/
# during the build), installs it, starts two servers on free loopback ports (`arbiter serve` in
# development mode, and one with an API keys file holding a key made by `arbiter keys new`),
# runs the unittest suite (clients/python/tests) against the installed package and
# examples/play.py, checks that play.py's last line is a result, and stops the servers with
# SIGTERM. Packages come from PyPI (grpcio, grpcio-tools, protobuf, setuptools); set PYTHON to
# choose the interpreter (default python3).
set -euo pipefail
TPORT=

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
BIN=${1:-target/release/arbiter}
if [ ! -x "$BIN" ]; then
  echo "run-tests.sh: no arbiter binary at $BIN (build it, or pass its path)" >&2
  exit 2
fi
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
PY=${PYTHON:-python3}
VENV=target/pyclient-venv
WHEELS=target/pyclient-wheel
mkdir -p target
WORK=$(mktemp -d "$ROOT/target/pyclient-run.XXXXXX")
PIDS=()
export GRPC_VERBOSITY=ERROR PIP_DISABLE_PIP_VERSION_CHECK=1

stop_servers() {
  local pid
  for pid in "${PIDS[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "run-tests.sh: server $pid did not stop on SIGTERM" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
  done
  PIDS=()
}
cleanup() {
  local status=$?
  stop_servers
  if [ "$status" -ne 0 ]; then
    for log in "$WORK"/*.log; do
      [ -f "$log" ] && { echo "--- $log (last lines)" >&2; tail -n 20 "$log" >&2; }
    done
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

echo "== venv and wheel"
rm -rf "$VENV" "$WHEELS"
"$PY" -m venv "$VENV"
VPY="$ROOT/$VENV/bin/python"
"$VPY" -m pip wheel -q ./clients/python -w "$WHEELS"
"$VPY" -m pip install -q --no-index --find-links "$WHEELS" arbiter-client
(cd "$WORK" && "$VPY" -c 'import arbiter_client, sys; print("installed", arbiter_client.__file__)')

free_port() {
  "$VPY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_ready() {
  "$VPY" - "$1" <<'EOF'
import sys, grpc
grpc.channel_ready_future(grpc.insecure_channel(sys.argv[1])).result(timeout=60)
EOF
}

wait_port() {
  "$VPY" - "$1" <<'EOF'
import socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
for _ in range(600):
    try:
        socket.create_connection((host, int(port)), timeout=1).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit(f"nothing listens on {sys.argv[1]}")
EOF
}

SERVE_FLAGS=()
# Faster matchmaking waves for the pool test, where the server has the flag.
if "$BIN" serve --help 2>/dev/null | grep -q -- '--mm-wave-interval-ms'; then
  SERVE_FLAGS+=(--mm-wave-interval-ms 500)
fi

echo "== servers"
PORT=$(free_port)
"$BIN" serve --listen "127.0.0.1:$PORT" "${SERVE_FLAGS[@]}" >"$WORK/serve.log" 2>&1 &
PIDS+=($!)
"$BIN" keys new --client pyclient-test --scope all --key-file "$WORK/test.key" >"$WORK/keys.toml"
KPORT=$(free_port)
"$BIN" serve --listen "127.0.0.1:$KPORT" --api-keys-file "$WORK/keys.toml" "${SERVE_FLAGS[@]}" \
  >"$WORK/serve-keyed.log" 2>&1 &
PIDS+=($!)
# A third one with mutual TLS, its certificate naming only arbiter.test (so clients need
# tls_server_name), from a CA made here (skipped without openssl).
TLS_ENV=()
if command -v openssl >/dev/null 2>&1; then
  (
    cd "$WORK"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key \
      -out ca.pem -days 2 -subj /CN=arbiter-test-ca \
      -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
    for who in server client; do
      openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$who.key" \
        -out "$who.csr" -subj "/CN=$who.arbiter.test"
      usage=serverAuth; [ "$who" = client ] && usage=clientAuth
      printf 'subjectAltName=DNS:arbiter.test\nextendedKeyUsage=%s\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\n' \
        "$usage" >"$who.ext"
      openssl x509 -req -in "$who.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -out "$who.pem" \
        -days 2 -extfile "$who.ext"
    done
  ) >"$WORK/openssl.log" 2>&1
  TPORT=$(free_port)
  "$BIN" serve --listen "127.0.0.1:$TPORT" --tls-cert-file "$WORK/server.pem" \
    --tls-key-file "$WORK/server.key" --tls-client-ca-file "$WORK/ca.pem" \
    --tls-ca-file "$WORK/ca.pem" --tls-client-cert-file "$WORK/client.pem" \
    --tls-client-key-file "$WORK/client.key" --tls-server-name arbiter.test \
    >"$WORK/serve-tls.log" 2>&1 &
  PIDS+=($!)
  TLS_ENV=(ARBITER_TLS_ADDR="127.0.0.1:$TPORT" ARBITER_TLS_DIR="$WORK")
fi
wait_ready "127.0.0.1:$PORT"
wait_ready "127.0.0.1:$KPORT"
[ -n "$TPORT" ] && wait_port "127.0.0.1:$TPORT"
echo "arbiter serve on 127.0.0.1:$PORT, with keys on 127.0.0.1:$KPORT${TPORT:+, mutual TLS on 127.0.0.1:$TPORT}"

echo "== unittest"
(
  cd "$WORK"
  env -u ARBITER_API_KEY ARBITER_ADDR="127.0.0.1:$PORT" ARBITER_KEYED_ADDR="127.0.0.1:$KPORT" \
    ARBITER_TEST_KEY_FILE="$WORK/test.key" "${TLS_ENV[@]}" PYTHONDONTWRITEBYTECODE=1 \
    "$VPY" -m unittest discover -s "$ROOT/clients/python/tests" -t "$ROOT/clients/python/tests" -v
)

echo "== examples/play.py"
env -u ARBITER_API_KEY ARBITER_ADDR="127.0.0.1:$PORT" PYTHONDONTWRITEBYTECODE=1 \
  timeout 120 "$VPY" clients/python/examples/play.py | tee "$WORK/play.out"
LAST=$(tail -n 1 "$WORK/play.out")
if ! [[ "$LAST" =~ ^(1-0|0-1|1/2-1/2|3/4-1/4|1/4-3/4)\ [a-z-]+$ ]]; then
  echo "run-tests.sh: play.py's last line is not a result: '$LAST'" >&2
  exit 1
fi
# The same example against the keyed server, the key from ARBITER_API_KEY (the contract).
ARBITER_API_KEY=$(head -n 1 "$WORK/test.key") ARBITER_ADDR="127.0.0.1:$KPORT" PYTHONDONTWRITEBYTECODE=1 \
  timeout 120 "$VPY" clients/python/examples/play.py >"$WORK/play-keyed.out"
echo "play.py with a key: $(tail -n 1 "$WORK/play-keyed.out")"

stop_servers
echo "python client: all tests passed; play.py: $LAST"
