#!/usr/bin/env bash
# Usage (from the repository root, with the Node to prepare first on PATH; .ci/node.sh runs it):
#   bash .ci/sqlite-binary.sh [--cache-only]
# Makes the optional native module better-sqlite3 load on the `node` on PATH. Without internet its
# prebuilt download fails and node-gyp compiles it against the headers of npm_config_nodedir,
# minutes on two cores, so each ABI's binary is kept in the cache and copied back on the next switch.
# On a Node with node:sqlite (22.13+) better-sqlite3 is optional: when it does not build there (a
# Node newer than its release), that is said and remembered (not retried), and this still
# succeeds; its suites then run on node:sqlite alone. On Node 20 it is the only driver: exit 1.
# AI_BACKEND_CI_CACHE (default ~/.cache/ai-backend-ci) and AI_BACKEND_CI_BETTER_SQLITE3 (the
# package folder, default core's) exist for test/scripts/sqliteBinary.test.ts, which runs this on a
# stand-in package so that no real binary is touched.
# --cache-only: build this ABI's binary into the cache on a copy of the package, leaving the
# package's own binary alone (tests running meanwhile on another Node keep theirs) and writing no
# "does not build" mark (the real switch decides that). .ci/run prepares the other Nodes' binaries
# this way beside its Node 24 phase, so that their phases start with a copy instead of a compile.
set -euo pipefail
cache_only=0
if [ "${1:-}" = "--cache-only" ]; then cache_only=1; fi
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
if [ "$cache_only" = 1 ]; then
  if [ -f "$cached" ] || [ -f "$failed" ]; then
    echo "better-sqlite3: already prepared for Node $(node --version) (ABI $abi)"
    exit 0
  fi
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/node_modules"
  cp -r "$bsdir" "$tmp/node_modules/better-sqlite3"
  # Its dependencies (bindings, prebuild-install: its siblings in pnpm's layout) as links, so the copy builds and loads as the package does.
  for dep in "$(dirname "$bsdir")"/*; do
    name="$(basename "$dep")"
    [ "$name" = "better-sqlite3" ] || ln -s "$(realpath "$dep")" "$tmp/node_modules/$name"
  done
  bsdir="$tmp/node_modules/better-sqlite3"
  binary="$bsdir/build/Release/better_sqlite3.node"
  echo "better-sqlite3: compiling for Node $(node --version) (ABI $abi), into the cache only"
  if (cd "$bsdir" && npm run --silent install >/dev/null 2>&1) && loads; then
    # Under another name first: a switch reading the cache meanwhile never sees half a file.
    cp "$binary" "$cached.$$" && mv "$cached.$$" "$cached"
    echo "better-sqlite3 $bsver: cached for Node $(node --version)"
  else
    echo "better-sqlite3 $bsver: did not build for Node $(node --version) here; the switch to it will try again"
  fi
  exit 0
fi
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
