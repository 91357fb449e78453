# Sourced by the `unif serve` tests (after `cd SOURCE_DIR`, with UNIF set): a temp folder $tmp and
# the server killed and the folder removed on exit, ok/fail lines counted in $fails, and a server
# started on a free port and stopped.
#   serve_start ARGS...   unif serve --port 0 ARGS (its log in $tmp/serve.log), until it listens
#   serve_stop            SIGTERM, then its exit status must be 0
tmp=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
serve_start() {
  # Emptied here, not only by the background redirection: the wait below must not read the line a
  # previous server wrote.
  : > "$tmp/serve.log"
  "$UNIF" serve --port 0 "$@" 2> "$tmp/serve.log" &
  pid=$!
  i=0
  until grep -q '^listening on http://' "$tmp/serve.log" 2>/dev/null; do
    i=$((i + 1))
    if [ $i -gt 6000 ] || ! kill -0 $pid 2>/dev/null; then cat "$tmp/serve.log"; fail "no 'listening on' line"; exit 1; fi
    sleep 0.01
  done
  PORT=$(sed -n 's|^listening on http://127\.0\.0\.1:\([0-9]*\)$|\1|p' "$tmp/serve.log")
}
serve_stop() {
  kill -TERM $pid
  wait $pid
  rc=$?
  pid=""
  [ $rc = 0 ] || fail "exit $rc after SIGTERM"
}
