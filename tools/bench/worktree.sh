#!/usr/bin/env bash
# Usage: bash tools/bench/worktree.sh <commit> <dir>, e.g. `bash tools/bench/worktree.sh HEAD~1 /tmp/before`:
# a git worktree of <commit> at <dir> that runs the benchmarks with its own code, for side-by-side
# runs (`cd <dir> && npm run bench`, alternated with the same command here). Its node_modules is a
# directory of links to this checkout's packages, except Herald's own (@herald/*), which link to
# the worktree's apps/ and libs/: a link to this checkout's whole node_modules would resolve
# @herald/* to this checkout's libs, and the two sides would build the same libs
# (docs/benchmarks.md, session 34). Needs `npm ci` here first and the same package-lock.json on
# both sides. Remove it with `git worktree remove --force <dir>`.
set -euo pipefail
commit=${1:?usage: worktree.sh <commit> <dir>}
dir=${2:?usage: worktree.sh <commit> <dir>}
here=$(cd "$(dirname "$0")/../.." && pwd)
if ! git -C "$here" diff --quiet "$commit" HEAD -- package-lock.json; then
  echo "worktree.sh: $commit has another package-lock.json; run npm ci in the worktree instead" >&2
  exit 1
fi
git -C "$here" worktree add --detach "$dir" "$commit" >/dev/null
mkdir "$dir/node_modules"
for entry in "$here"/node_modules/* "$here"/node_modules/.bin; do
  name=$(basename "$entry")
  [ "$name" = "@herald" ] || ln -s "$entry" "$dir/node_modules/$name"
done
mkdir "$dir/node_modules/@herald"
for link in "$here"/node_modules/@herald/*; do
  ln -s "$(readlink "$link")" "$dir/node_modules/@herald/$(basename "$link")"
done
echo "worktree of $(git -C "$dir" rev-parse --short HEAD) at $dir; @herald/* resolve to $(cd "$dir/node_modules/@herald/contracts" && pwd -P)"
