#!/usr/bin/env bash
# Usage (from the repository root, with the Node to prepare first on PATH; .ci/node.sh runs it):
#   bash .ci/sqlite-binary.sh
# Makes the optional native module better-sqlite3 load on the `node` on PATH. Without internet its
# prebuilt download fails and node-gyp compiles it against the headers of npm_config_nodedir,
# minutes on two cores, so each ABI's binary is kept in the cache and copied back on the next switch.
# On a Node with node:sqlite (22.13+) better-sqlite3 is optional: when it does not build there (a
# Node newer than its release), that is said and remembered (not retried), and this still
# succeeds; its suites then run on node:sqlite alone. On Node 20 it is the only driver: exit 1.
# AI_BACKEND_CI_CACHE (default ~/.cache/ai-backend-ci) and AI_BACKEND_CI_BETTER_SQLITE3 (the
# package folder, default core's) exist for test/scripts/sqliteBinary.test.ts, which runs this on a
# stand-in package so that no real binary is touched.
set -euo pipefail
cachebase="${AI_BACKEND_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ai-backend-ci}"
bsdir="${AI_BACKEND_CI_BETTER_SQLITE3:-$(cd packages/core && node -p "require('path').dirname(require.resolve('better-sqlite3/package.json'))")}"
bsver="$(node -p "require('$bsdir/package.json').version")"
abi="$(node -p process.versions.modules)"
binary="$bsdir/build/Release/better_sqlite3.node"
cached="$cachebase/better-sqlite3-$bsver-abi$abi.node"
failed="$cachebase/better-sqlite3-$bsver-abi$abi.fails"
loads() { node -e "new (require('$bsdir'))(':memory:').prepare('select 1').get()" >/dev/null 2>&1; }
has_node_sqlite() { node -e "process.exit(process.getBuiltinModule?.('node:sqlite') ? 0 : 1)" >/dev/null 2>&1; }
mkdir -p "$cachebase"
if loads; then
  [ -f "$cached" ] || cp "$binary" "$cached"
elif [ -f "$cached" ]; then
  # A new file, never a write through: pnpm may hard-link a built package from its store, and
  # writing into that inode would change the binary of every checkout sharing it.
  cp --remove-destination "$cached" "$binary"
elif [ -f "$failed" ] && has_node_sqlite; then
  : # it did not build for this ABI before: do not spend minutes of CPU on it again
else
  echo "better-sqlite3: compiling for Node $(node --version) (ABI $abi)"
  if (cd "$bsdir" && npm run --silent install >/dev/null 2>&1); then cp "$binary" "$cached"; else touch "$failed"; fi
fi
if loads; then
  echo "better-sqlite3 $bsver: loads on Node $(node --version)"
elif has_node_sqlite; then
  echo "better-sqlite3 $bsver: does not load on Node $(node --version); it is optional here (the SQLite store runs on node:sqlite)"
else
  echo "better-sqlite3 $bsver does not load on Node $(node --version), which has no node:sqlite" >&2
  exit 1
fi
