#!/usr/bin/env bash
# Checks the compose deployment end to end on this Docker host, after the release build:
#
#   bash tools/deploy-check.sh
#
# Runs exactly the documented commands (docs/operations.md, "The compose topology"):
# deploy/dev-secrets.sh, deploy/build-images.sh, `docker-compose -f deploy/compose.yaml up -d`;
# then waits up to 60 s for every container to report healthy (printing the state and the logs
# of any that does not), runs `down -v`, and checks that no container, network or volume of the
# project is left. Another project of the same name must not be running here.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

say() { echo "deploy-check: $*"; }
COMPOSE=(docker-compose -f deploy/compose.yaml)
# docker-compose names the project after the compose file's folder.
PROJECT=deploy

if ! command -v docker-compose >/dev/null 2>&1; then
  say "installing Debian's docker-compose"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends docker-compose
fi

bash deploy/dev-secrets.sh
bash deploy/build-images.sh
# A second run with nothing changed must skip every image.
start=$(date +%s%N)
second="$(bash deploy/build-images.sh)"
ms=$((($(date +%s%N) - start) / 1000000))
if grep -q "building" <<<"$second"; then
  echo "$second"
  say "FAILED: a second build-images.sh run rebuilt an image"
  exit 1
fi
say "second build-images.sh run: nothing to do, ${ms} ms"

cleanup() { "${COMPOSE[@]}" down -v --remove-orphans >/dev/null 2>&1 || true; }
trap cleanup EXIT

t0=$(date +%s)
"${COMPOSE[@]}" up -d
ids="$("${COMPOSE[@]}" ps -q)"
count=$(wc -w <<<"$ids")
expected=$("${COMPOSE[@]}" config --services | wc -l)
[ "$count" = "$expected" ] || {
  "${COMPOSE[@]}" ps
  say "FAILED: $count containers for $expected services"
  exit 1
}

deadline=$((t0 + 60))
while :; do
  unhealthy=()
  for id in $ids; do
    state="$(docker inspect -f '{{.Name}} {{if .State.Health}}{{.State.Health.Status}}{{else}}no-healthcheck{{end}}' "$id")"
    [ "${state##* }" = healthy ] || unhealthy+=("$state")
  done
  [ ${#unhealthy[@]} = 0 ] && break
  if [ "$(date +%s)" -ge "$deadline" ]; then
    say "FAILED: not healthy within 60 s: ${unhealthy[*]}"
    "${COMPOSE[@]}" ps
    for id in $ids; do
      name="$(docker inspect -f '{{.Name}}' "$id")"
      echo "--- $name: last health check"
      docker inspect -f '{{if .State.Health}}{{range .State.Health.Log}}{{.ExitCode}} {{.Output}}{{end}}{{end}}' "$id" | tail -3
      echo "--- $name: log"
      docker logs --tail 20 "$id" 2>&1
    done
    exit 1
  fi
  sleep 1
done
say "all $count containers healthy after $(($(date +%s) - t0)) s"

trap - EXIT
"${COMPOSE[@]}" down -v
left="$(
  docker ps -aq --filter "label=com.docker.compose.project=$PROJECT"
  docker network ls -q --filter "label=com.docker.compose.project=$PROJECT"
  docker volume ls -q --filter "label=com.docker.compose.project=$PROJECT"
)"
if [ -n "$left" ]; then
  say "FAILED: down -v left behind: $left"
  exit 1
fi
say "down -v left no container, network or volume behind"
