#!/usr/bin/env bash
# Writes the secrets of a development deployment into deploy/secrets/ (git-ignored), where
# deploy/compose.yaml mounts them and from which `kubectl create secret` can take them
# (docs/kubernetes.md):
#
#   seat-key        the key every match replica signs seat tokens with (64 hex digits: 32 bytes)
#   platform-token  the bearer token of platform calls (creating matches, clocks; matchmaking
#                   uses it to create matches)
#
# An existing file is kept (a second run changes nothing: tokens already handed out stay
# valid); FORCE=1 draws new ones. The folder is readable by its owner only; the files are
# readable by all so that the containers' non-root user can read their bind mounts.
set -euo pipefail
dir="$(cd "$(dirname "$0")" && pwd)/secrets"
mkdir -p "$dir"
chmod 700 "$dir"

# 32 random bytes in hex: the kernel's CSPRNG, through od (coreutils), no other tool needed.
random_hex() { od -An -N32 -tx1 /dev/urandom | tr -d ' \n'; }

for name in seat-key platform-token; do
  file="$dir/$name"
  if [ -s "$file" ] && [ -z "${FORCE:-}" ]; then
    echo "dev-secrets: $name kept"
    continue
  fi
  (umask 022 && random_hex > "$file.tmp" && mv "$file.tmp" "$file")
  echo "dev-secrets: $name written"
done
