#!/usr/bin/env bash
# Builds Arbiter's container images from the binaries of the one release build:
#
#   cargo test --workspace --release --no-run     # or cargo build --workspace --release
#   bash deploy/build-images.sh
#
# Images (each tagged :latest and with the workspace version): arbiter-rules, arbiter-matches,
# arbiter-clock, arbiter-matchmaking, arbiter-analysis, arbiter-worker (one per binary), plus
# arbiter-proxy (HAProxy, the entry point of compose.yaml), arbiter-prometheus (Prometheus, which
# scrapes them there: deploy/observability) and the Redis image compose.yaml runs.
#
# The Dockerfiles in deploy/images/ take their base as a build argument. On a machine that can
# pull images it is the public debian:bookworm-slim; where no registry answers, this script
# first makes a Debian base image from Debian's packages (mmdebstrap, then docker import) and
# builds on that one. Work already done is skipped: an image whose label records the same
# binary, Dockerfile and base is left as it is, so a second run with nothing changed takes
# seconds.
#
# Environment:
#   BASE_IMAGE    base for every image (default: debian:bookworm-slim, else the local one)
#   TARGET_DIR    where the release binaries are (default: $CARGO_TARGET_DIR or target)
#   FORCE=1       rebuild everything, the local base included
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "build-images: $*"; }
die() {
  echo "build-images: $*" >&2
  exit 1
}

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
VERSION="$(sed -n '/^\[workspace.package\]/,/^\[/ s/^version *= *"\(.*\)"/\1/p' Cargo.toml)"
[ -n "$VERSION" ] || die "no version in Cargo.toml's [workspace.package]"
BIN_DIR="${TARGET_DIR:-${CARGO_TARGET_DIR:-target}}/release"
SUITE=bookworm
LOCAL_BASE="arbiter-base:$SUITE"

# --- the base ---------------------------------------------------------------------------------
image_exists() { docker image inspect "$1" >/dev/null 2>&1; }

make_local_base() {
  if image_exists "$LOCAL_BASE" && [ -z "${FORCE:-}" ]; then
    return
  fi
  if ! command -v mmdebstrap >/dev/null 2>&1; then
    say "installing mmdebstrap (Debian package) to make the base image"
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends mmdebstrap
  fi
  say "making $LOCAL_BASE from Debian $SUITE packages (mmdebstrap, a minute or two)"
  local tar
  tar="$(mktemp --suffix=.tar)"
  # minbase: dpkg, apt, bash, coreutils, glibc; plus CA certificates. No documentation, no
  # package lists: the image is the same size class as debian:bookworm-slim.
  $SUDO mmdebstrap --variant=minbase --quiet --include=ca-certificates \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
    "$SUITE" "$tar"
  $SUDO chmod a+r "$tar"
  docker import --change 'CMD ["bash"]' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    "$tar" "$LOCAL_BASE" >/dev/null
  rm -f "$tar"
}

if [ -n "${BASE_IMAGE:-}" ]; then
  BASE="$BASE_IMAGE"
  image_exists "$BASE" || docker pull -q "$BASE" >/dev/null || die "cannot find or pull $BASE"
elif image_exists debian:bookworm-slim || docker pull -q debian:bookworm-slim >/dev/null 2>&1; then
  BASE=debian:bookworm-slim
else
  say "no registry answers: the base is made from Debian packages"
  make_local_base
  BASE="$LOCAL_BASE"
fi
BASE_ID="$(docker image inspect -f '{{.Id}}' "$BASE")"
say "base $BASE ($BASE_ID)"

# --- one image ----------------------------------------------------------------------------------
# build NAME DOCKERFILE [FILE...]: builds NAME from DOCKERFILE with a context holding only the
# FILEs, unless the image's label already records the same inputs.
build() {
  local name="$1" dockerfile="$2"
  shift 2
  local key
  key="$(
    {
      echo "$BASE_ID"
      sha256sum "$dockerfile" "$@" | cut -d' ' -f1
    } | sha256sum | cut -d' ' -f1
  )"
  if [ -z "${FORCE:-}" ] &&
    [ "$(docker image inspect -f '{{index .Config.Labels "dev.arbiter.inputs"}}' "$name:$VERSION" 2>/dev/null)" = "$key" ] &&
    image_exists "$name:latest"; then
    say "$name:$VERSION is up to date"
    return
  fi
  local context f status=0
  context="$(mktemp -d)"
  # Debug information stays on the build machine (for symbolising crash reports): the image
  # gets the binary without it, a third of the size.
  for f in "$@"; do
    if command -v strip >/dev/null 2>&1; then
      strip --strip-debug -o "$context/$(basename "$f")" "$f"
    else
      cp "$f" "$context/"
    fi
  done
  say "building $name:$VERSION"
  docker build --quiet -f "$dockerfile" --build-arg "BASE=$BASE" \
    --label "dev.arbiter.inputs=$key" --label "org.opencontainers.image.version=$VERSION" \
    -t "$name:$VERSION" -t "$name:latest" "$context" >/dev/null || status=$?
  rm -rf "$context"
  [ "$status" = 0 ] || die "docker build of $name failed"
}

for bin in rules matches clock matchmaking analysis worker; do
  exe="$BIN_DIR/arbiter-$bin"
  [ -x "$exe" ] || die "$exe is missing: build the release binaries first" \
    "(cargo build --workspace --release)"
  build "arbiter-$bin" "deploy/images/$bin.Dockerfile" "$exe"
done
build arbiter-proxy deploy/images/proxy.Dockerfile
build arbiter-prometheus deploy/images/prometheus.Dockerfile

# --- Redis ----------------------------------------------------------------------------------------
# compose.yaml's Redis, which its health check asks with redis-cli.
REDIS_IMAGE="${REDIS_IMAGE:-redis:7}"
if ! image_exists "$REDIS_IMAGE"; then
  docker pull -q "$REDIS_IMAGE" >/dev/null 2>&1 || REDIS_IMAGE="$REDIS_IMAGE" bash deploy/build-redis-image.sh
elif ! docker run --rm --entrypoint redis-cli "$REDIS_IMAGE" --version >/dev/null 2>&1; then
  say "$REDIS_IMAGE has no redis-cli: rebuilding it"
  FORCE=1 REDIS_IMAGE="$REDIS_IMAGE" bash deploy/build-redis-image.sh
fi
say "done: arbiter-{rules,matches,clock,matchmaking,analysis,worker,proxy,prometheus}:{$VERSION,latest}, $REDIS_IMAGE"
