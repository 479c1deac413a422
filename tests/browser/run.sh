#!/usr/bin/env bash
# The web page's test in a real browser: starts `arbiter serve --web-root clients/web` on a free
# loopback port, opens the page (clients/web) in headless Chromium through selenium, and for each
# variant (chess, crazyhouse, bughouse, Glinski, Byzantine) creates a match through a Python
# client generated from proto/, plays a short game through the API (one move through the page's
# own form), and checks that the page shows every move, the boards and the result. Screenshots:
# target/browser-artifacts/<variant>.png. Also checks that clients/web/schema.json is up to date
# with proto/ (clients/web/gen-schema.py --check).
#
#   bash tests/browser/run.sh [ARBITER_BIN]      # default target/release/arbiter
#
# Needs python3 (with venv), PyPI (selenium, grpcio, grpcio-tools, into target/browser-venv),
# Chromium and its driver: when `chromium`/`chromedriver` are missing and apt-get is usable, it
# installs Debian's `chromium` and `chromium-driver`. CHROMIUM and CHROMEDRIVER override the paths.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${1:-$root/target/release/arbiter}"
case "$bin" in /*) ;; *) bin="$PWD/$bin" ;; esac
venv="$root/target/browser-venv"
gen="$root/target/browser-gen"
artifacts="$root/target/browser-artifacts"

if [ ! -x "$bin" ]; then
  echo "FAILED: no arbiter binary at $bin (cargo build --release -p arbiter-cli)" >&2
  exit 2
fi
if ! "$bin" serve --help 2>/dev/null | grep -q -- '--web-root'; then
  echo "FAILED: $bin has no 'serve --web-root' (the static page server with gRPC-web)" >&2
  exit 2
fi

# Chromium and chromedriver: Debian's packages when missing.
find_cmd() { for c in "$@"; do if command -v "$c" >/dev/null 2>&1; then command -v "$c"; return 0; fi; done; return 1; }
chromium="${CHROMIUM:-$(find_cmd chromium chromium-browser google-chrome || true)}"
driver="${CHROMEDRIVER:-$(find_cmd chromedriver || true)}"
if [ -z "$chromium" ] || [ -z "$driver" ]; then
  if command -v apt-get >/dev/null 2>&1; then
    sudo_cmd=""
    [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo -n"
    echo "installing chromium and chromium-driver with apt-get"
    $sudo_cmd apt-get update -q && DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q chromium chromium-driver
    chromium="$(find_cmd chromium chromium-browser)"
    driver="$(find_cmd chromedriver)"
  else
    echo "FAILED: chromium and chromedriver are needed (Debian: apt-get install chromium chromium-driver)" >&2
    exit 2
  fi
fi

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -c "import selenium, grpc, grpc_tools" 2>/dev/null \
  || "$venv/bin/pip" install --quiet "selenium>=4.10" "grpcio>=1.60" "grpcio-tools>=1.60"

"$venv/bin/python" "$root/clients/web/gen-schema.py" --check

rm -rf "$gen" && mkdir -p "$gen" "$artifacts"
rm -f "$artifacts"/*.png
"$venv/bin/python" -m grpc_tools.protoc -I "$root/proto" --python_out="$gen" --grpc_python_out="$gen" \
  "$root/proto/arbiter/common/v1/common.proto" "$root/proto/arbiter/rules/v1/rules.proto" \
  "$root/proto/arbiter/matches/v1/matches.proto"

port=$("$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log="$root/target/browser-serve.log"
"$bin" serve --listen "127.0.0.1:$port" --web-root "$root/clients/web" > "$log" 2>&1 &
server=$!
trap 'kill -TERM $server 2>/dev/null || true' EXIT

if ! CHROMIUM="$chromium" CHROMEDRIVER="$driver" PYTHONPATH="$gen" \
    "$venv/bin/python" "$root/tests/browser/test_page.py" "127.0.0.1:$port" "$artifacts"; then
  echo "--- the server's log (last 40 lines of $log) ---" >&2
  tail -n 40 "$log" >&2 || true
  exit 1
fi
kill -TERM $server
wait $server
trap - EXIT
echo "arbiter serve stopped cleanly on SIGTERM; screenshots in ${artifacts#$root/}/"
