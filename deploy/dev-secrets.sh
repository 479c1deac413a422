#!/usr/bin/env bash
# Writes the secrets of a development deployment into deploy/secrets/ (git-ignored), where
# deploy/compose.yaml mounts them and from which `kubectl create secret` can take them
# (docs/kubernetes.md):
#
#   seat-key          the key every match replica signs seat tokens with (64 hex digits: 32 bytes)
#   platform-token    a platform token (--platform-token-file: a key of client "platform" with
#                     every scope, for a deployment without a keys file)
#   api-keys.toml     the keys file every compose service reads (--api-keys-file): the SHA-256 of
#                     each key below, never a key (format: docs/security.md)
#   platform-key      the key of client "platform", every scope (what the system test presents)
#   matchmaking-key   the key of client "matchmaking": matches:create and matches:read, which
#                     matchmaking presents to the match service
#   redis-<user>-password   the password of each Redis ACL user of deploy/redis/acl.conf, and of
#                     `default` (every right: for an operator, never for a service)
#   redis-users.acl   the ACL file Redis loads (those passwords as SHA-256 digests)
#   ca.pem            the development CA every certificate below chains to (its key is not kept)
#   redis-cert.pem, redis-key.pem, redis-client-cert.pem, redis-client-key.pem
#                     Redis over TLS: its certificate and key, the services' client certificate
#   grpc-cert.pem, grpc-key.pem, proxy.pem
#                     the gRPC servers' certificate (every service name and 127.0.0.1) and key,
#                     and both in one file for HAProxy
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
  all='"rules", "matches:create", "matches:read", "matches:admin", "clock:write", "clock:read", "matchmaking:queue", "matchmaking:ratings", "matchmaking:admin", "analysis:live", "analysis:batch", "analysis:worker"'
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

# Redis: a password per ACL user of deploy/redis/acl.conf and for `default`, and the ACL file
# Redis loads (each password as its SHA-256, so the file holds none). `default` keeps every
# right, behind its password (for an operator): Redis replays its append-only file as that user,
# and Redis 7 re-checks the MULTI/EXEC blocks there (every script's writes) against its ACL, so a
# restricted `default` silently loses data at restart (docs/security.md). `healthcheck` may only
# PING, with any password. Then TLS: a CA, Redis's certificate (DNS name `redis`, and `localhost`), one client
# certificate the services present to Redis (it runs with tls-auth-clients yes), and the gRPC
# servers' certificate. openssl makes them (Debian's openssl package).
users="$(grep -v '^#' "$(dirname "$0")/redis/acl.conf" | awk 'NF {print $2}')"
for user in default $users; do
  file="$dir/redis-$user-password"
  if [ -s "$file" ] && [ -z "${FORCE:-}" ]; then continue; fi
  (umask 022 && random_hex > "$file.tmp" && mv "$file.tmp" "$file")
  echo "dev-secrets: redis-$user-password written"
done
(
  umask 022
  sha="$(tr -d '\n' < "$dir/redis-default-password" | sha256sum | cut -d' ' -f1)"
  {
    echo "user default on #$sha ~* &* +@all"
    echo "user healthcheck on nopass resetkeys resetchannels -@all +ping"
  } > "$dir/redis-users.acl.tmp"
  grep -v '^#' "$(dirname "$0")/redis/acl.conf" | awk 'NF' | while read -r line; do
    user="$(echo "$line" | awk '{print $2}')"
    sha="$(tr -d '\n' < "$dir/redis-$user-password" | sha256sum | cut -d' ' -f1)"
    echo "$line #$sha"
  done >> "$dir/redis-users.acl.tmp"
  mv "$dir/redis-users.acl.tmp" "$dir/redis-users.acl"
)
echo "dev-secrets: redis-users.acl rendered from deploy/redis/acl.conf"

if [ -s "$dir/ca.pem" ] && [ -s "$dir/redis-cert.pem" ] && [ -s "$dir/redis-client-cert.pem" ] \
  && [ -s "$dir/grpc-cert.pem" ] && [ -s "$dir/proxy.pem" ] && [ -z "${FORCE:-}" ]; then
  echo "dev-secrets: TLS certificates kept"
else
  if ! command -v openssl >/dev/null 2>&1; then
    echo "dev-secrets: openssl is needed for the certificates (apt-get install openssl)" >&2
    exit 1
  fi
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  (
    umask 022
    cd "$tmp"
    # The CA's key signs the certificates below and is then thrown away: new certificates
    # mean a new CA (FORCE=1).
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 825 \
      -subj "/CN=arbiter dev CA" -keyout ca-key.pem -out ca.pem 2>/dev/null
    # $1: file stem, $2: subject, $3: extensions.
    issue() {
      openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$2" \
        -keyout "$1-key.pem" -out "$1.csr" 2>/dev/null
      printf '%s\n' "$3" > "$1.ext"
      openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 825 \
        -extfile "$1.ext" -out "$1-cert.pem" 2>/dev/null
    }
    issue redis redis "subjectAltName=DNS:redis,DNS:localhost
extendedKeyUsage=serverAuth"
    issue client arbiter "extendedKeyUsage=clientAuth"
    # Every gRPC server of the topology shares one certificate, with every replica's name and
    # the loopback address the published ports are reached on.
    names="DNS:localhost,IP:127.0.0.1,DNS:proxy"
    for n in rules-1 rules-2 matches-1 matches-2 analysis-1 analysis-2 clock matchmaking; do
      names="$names,DNS:$n"
    done
    issue grpc arbiter "subjectAltName=$names
extendedKeyUsage=serverAuth"
    cp ca.pem "$dir/ca.pem"
    cp redis-cert.pem "$dir/redis-cert.pem"
    cp redis-key.pem "$dir/redis-key.pem"
    cp client-cert.pem "$dir/redis-client-cert.pem"
    cp client-key.pem "$dir/redis-client-key.pem"
    cp grpc-cert.pem "$dir/grpc-cert.pem"
    cp grpc-key.pem "$dir/grpc-key.pem"
    # HAProxy reads a certificate and its key from one file.
    cat grpc-cert.pem grpc-key.pem > "$dir/proxy.pem"
  )
  echo "dev-secrets: TLS certificates written (CA; Redis, its client, the gRPC servers)"
fi
# openssl writes private keys for their owner only; the containers' non-root users read them
# through bind mounts (the folder itself stays the owner's only).
chmod a+r "$dir"/*.pem
