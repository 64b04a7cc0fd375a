#!/usr/bin/env bash
# build-base.sh REV OUT: build the devpilot binary of commit REV into OUT,
# from a clean export of that commit (the work tree is left alone), so that a
# benchmark can run it side by side with the current code.
set -euo pipefail
rev=${1:?usage: build-base.sh REV OUT}
out=${2:?usage: build-base.sh REV OUT}
root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git -C "$root" archive "$(git -C "$root" rev-parse --verify "$rev^{commit}")" | tar -x -C "$tmp"
mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
(cd "$tmp" && go build -o "$out" ./hosts/devpilot)
echo "built $(git -C "$root" rev-parse --short "$rev^{commit}") into $out"
