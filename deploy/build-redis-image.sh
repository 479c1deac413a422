#!/usr/bin/env bash
# Builds the Redis image the tests and deploy/ use, from Debian's redis-server package, for
# machines without a container registry. On a machine with a registry nothing needs building:
# `docker pull redis:7` gives the public image with the same name and tag.
#
#   bash deploy/build-redis-image.sh          # builds redis:7 unless it already exists
#   FORCE=1 bash deploy/build-redis-image.sh  # rebuilds
#
# The image holds redis-server and redis-cli (health checks run `redis-cli ping`), the shared libraries it links against (from the host's Debian
# packages, found with ldd) and an empty /data; it runs with protected mode off, listening on
# 0.0.0.0:6379, with an append-only file fsynced on every write, so a stopped and restarted
# container keeps its data (the tests restart Redis mid-match).
set -euo pipefail

IMAGE="${REDIS_IMAGE:-redis:7}"

# An image from before redis-cli was added is rebuilt.
if [ -z "${FORCE:-}" ] && docker image inspect "$IMAGE" >/dev/null 2>&1 &&
  docker run --rm --entrypoint redis-cli "$IMAGE" --version >/dev/null 2>&1; then
  echo "build-redis-image: $IMAGE already exists"
  exit 0
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
if ! command -v redis-server >/dev/null 2>&1; then
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends redis-server
fi
# The package starts a system service; the image needs only the binary.
$SUDO systemctl disable --now redis-server >/dev/null 2>&1 || true

root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/usr/bin" "$root/data" "$root/tmp" "$root/etc"
cp -L "$(command -v redis-server)" "$root/usr/bin/redis-server"
cp -L "$(command -v redis-cli)" "$root/usr/bin/redis-cli"
# Every library either loads, at the same path, plus the dynamic loader.
{ ldd "$(command -v redis-server)"; ldd "$(command -v redis-cli)"; } | awk '/=>/ {print $3} !/=>/ && $1 ~ /^\// {print $1}' |
  while read -r lib; do
    [ -n "$lib" ] || continue
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
chmod 1777 "$root/tmp"
echo "root:x:0:0:root:/root:/bin/sh" > "$root/etc/passwd"
echo "root:x:0:" > "$root/etc/group"

tar -C "$root" -c . | docker import \
  --change 'EXPOSE 6379' \
  --change 'WORKDIR /data' \
  --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
  --change 'CMD ["/usr/bin/redis-server", "--protected-mode", "no", "--bind", "0.0.0.0", "--port", "6379", "--dir", "/data", "--appendonly", "yes", "--appendfsync", "always"]' \
  - "$IMAGE" >/dev/null
echo "build-redis-image: built $IMAGE from $(redis-server --version | cut -d' ' -f1-3)"
