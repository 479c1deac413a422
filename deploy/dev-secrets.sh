#!/usr/bin/env bash
# Writes the secrets of a development deployment into deploy/secrets/ (git-ignored), where
# deploy/compose.yaml mounts them and from which `kubectl create secret` can take them
# (docs/kubernetes.md):
#
#   seat-key          the key every match replica signs seat tokens with (64 hex digits: 32 bytes)
#   platform-token    the platform token (the Kubernetes manifests' credential for platform calls)
#   api-keys.toml     the keys file every compose service reads (--api-keys-file): the SHA-256 of
#                     each key below, never a key (format: docs/security.md)
#   platform-key      the key of client "platform", every scope (what the system test presents)
#   matchmaking-key   the key of client "matchmaking": matches:create and matches:read, which
#                     matchmaking presents to the match service
#
# An existing file is kept (a second run changes nothing: tokens and keys already handed out
# stay valid; the keys file and its keys are made together); FORCE=1 draws new ones. The folder
# is readable by its owner only; the files are readable by all so that the containers' non-root
# user can read their bind mounts. Keys are made here with coreutils alone (the same form as
# `arbiter keys new`), so that no binary need be built first.
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

# An API key: arb_<12 hex digits>_<32 random bytes in unpadded base64url>.
new_key() {
  local id secret
  id="$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
  secret="$(head -c 32 /dev/urandom | base64 -w0 | tr '+/' '-_' | tr -d '=')"
  printf 'arb_%s_%s' "$id" "$secret"
}

# The [[key]] entry of key $1 for client $2 with scopes $3 (a TOML list's inside).
entry() {
  local id sha
  id="$(printf '%s' "$1" | cut -d_ -f2)"
  sha="$(printf '%s' "$1" | sha256sum | cut -d' ' -f1)"
  printf '[[key]]\nid = "%s"\nclient = "%s"\nsha256 = "%s"\nscopes = [%s]\nnote = "deploy/dev-secrets.sh"\n\n' \
    "$id" "$2" "$sha" "$3"
}

if [ -s "$dir/api-keys.toml" ] && [ -s "$dir/platform-key" ] && [ -s "$dir/matchmaking-key" ] \
  && [ -z "${FORCE:-}" ]; then
  echo "dev-secrets: api-keys.toml, platform-key, matchmaking-key kept"
else
  platform="$(new_key)"
  matchmaking="$(new_key)"
  all='"rules", "matches:create", "matches:read", "matches:admin", "clock:write", "clock:read", "matchmaking:queue", "matchmaking:ratings", "analysis:live", "analysis:batch"'
  (
    umask 022
    {
      echo "# API keys of the development deployment (deploy/dev-secrets.sh); docs/security.md."
      echo
      entry "$platform" platform "$all"
      entry "$matchmaking" matchmaking '"matches:create", "matches:read"'
    } > "$dir/api-keys.toml.tmp"
    printf '%s\n' "$platform" > "$dir/platform-key.tmp"
    printf '%s\n' "$matchmaking" > "$dir/matchmaking-key.tmp"
    mv "$dir/platform-key.tmp" "$dir/platform-key"
    mv "$dir/matchmaking-key.tmp" "$dir/matchmaking-key"
    mv "$dir/api-keys.toml.tmp" "$dir/api-keys.toml"
  )
  echo "dev-secrets: api-keys.toml, platform-key, matchmaking-key written"
fi
