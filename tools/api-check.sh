#!/usr/bin/env bash
# The API contract's checks (CI runs this): `buf lint` (STANDARD rules, proto/buf.yaml), and
# `buf breaking` of proto/ against the committed descriptor image proto/api-image.binpb.
#
# The image is the frozen contract. It must match the .proto files (a change to them without a
# new image fails here), and the commit that last replaced it must also change
# docs/api/CHANGES.md whenever the new image breaks the one before it: a deliberate break is
# always written down. `tools/api-check.sh --update` writes the image anew after a change.
#
# buf comes from PyPI (`buf-bin`), in a virtual environment under target/.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
image=proto/api-image.binpb
venv=target/buf-venv
if [ ! -x "$venv/bin/buf" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "buf-bin>=1.50,<2"
fi
buf="$venv/bin/buf"
mkdir -p target/api-check
if [ "${1:-}" = "--update" ]; then
  "$buf" build proto --exclude-source-info -o "$image"
  echo "wrote $image; say what changed in docs/api/CHANGES.md"
  exit 0
fi

"$buf" lint proto
echo "buf lint: ok"
"$buf" breaking proto --against "$image"
echo "buf breaking against $image: ok"

"$buf" build proto --exclude-source-info -o target/api-check/now.binpb
if ! cmp -s target/api-check/now.binpb "$image"; then
  echo "error: $image does not match proto/: run tools/api-check.sh --update and record the change in docs/api/CHANGES.md" >&2
  exit 1
fi
echo "$image matches proto/"

# The commit that last replaced the image: a break of its predecessor must be in CHANGES.md.
if git rev-parse --git-dir >/dev/null 2>&1; then
  last=$(git log -1 --format=%H -- "$image")
  if [ -n "$last" ] && git cat-file -e "$last^:$image" 2>/dev/null; then
    git show "$last^:$image" > target/api-check/before.binpb
    if ! "$buf" breaking "$image" --against target/api-check/before.binpb > target/api-check/breaks.txt 2>&1; then
      if ! git diff-tree --no-commit-id --name-only -r "$last" | grep -qx docs/api/CHANGES.md; then
        cat target/api-check/breaks.txt >&2
        echo "error: commit ${last:0:12} breaks the API (above) without a word in docs/api/CHANGES.md" >&2
        exit 1
      fi
      echo "the last image change (${last:0:12}) is a break recorded in docs/api/CHANGES.md"
    fi
  fi
fi
