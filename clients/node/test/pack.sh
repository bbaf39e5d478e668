#!/usr/bin/env bash
# The package as a user gets it: npm pack, the tarball installed into a
# scratch project (with pg, its peer), and loaded there by import and by
# require, both giving the client and each adapter.  Run by test.sh in a
# copy of the package; $1 is npm's cache.
set -euo pipefail
cache=$1
pkg=$PWD
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
tarball=$(npm pack --silent --cache "$cache" --pack-destination "$scratch")
tar -tzf "$scratch/$tarball" | sort >"$scratch/contents"
grep -qx 'package/lib/index.d.ts' "$scratch/contents"
if grep -q '^package/test/' "$scratch/contents"; then echo "the tarball holds the tests" >&2; exit 1; fi
cd "$scratch"
echo '{"name": "scratch", "version": "1.0.0", "private": true}' >package.json
# pg from the package's own lock, so that no version the tests did not see is fetched
npm install --silent --no-audit --no-fund --offline --cache "$cache" "./$tarball" "$pkg/node_modules/pg" >/dev/null
expected='FixedWindow,FixedWindowStore,RateLimiterFixedWindow,fastifyStore,shardOf'
esm=$(node --input-type=module -e "
import * as m from 'fixed-window-pg';
console.log(['FixedWindow', 'FixedWindowStore', 'RateLimiterFixedWindow', 'fastifyStore', 'shardOf'].filter((n) => typeof m[n] === 'function').join());")
cjs=$(node -e "
const m = require('fixed-window-pg');
console.log(['FixedWindow', 'FixedWindowStore', 'RateLimiterFixedWindow', 'fastifyStore', 'shardOf'].filter((n) => typeof m[n] === 'function').join());")
[ "$esm" = "$expected" ] || { echo "import gave: $esm" >&2; exit 1; }
[ "$cjs" = "$expected" ] || { echo "require gave: $cjs" >&2; exit 1; }
echo "npm pack: $(wc -l <contents) files; import and require give $expected"
