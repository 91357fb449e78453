# Shared by the shell regression tests (sourced).
#
# test_setup
#   A temp folder $tmp, removed on exit, and ok/fail lines (fail counts in $fails).
# expect_usage_error WHAT PATTERN COMMAND [ARGS...]
#   COMMAND exits 2 with an `error:` line matching PATTERN: ok, else fail.
# stop_midway SIGNAL FILE LIMIT_S LOG COMMAND [ARGS...]
#   Starts COMMAND (a shell function whose unif call reads `$EXEC "$UNIF" ...`) in the background
#   with EXEC=exec, so that the background job IS the unif process: a signal sent to a subshell
#   would not reach unif (and a SIGKILLed subshell would leave unif running on). Waits until FILE
#   exists and, when STOP_GREP is set, holds a line matching it (at most LIMIT_S seconds, or until
#   the process ends), sends SIGNAL, waits for the exit.
#   Sets STOP_RC to the exit status (128 + signal number when the signal killed it).
stop_midway() {
  _sig=$1 _file=$2 _limit=$3 _log=$4
  shift 4
  (
    EXEC=exec
    "$@"
  ) > "$_log" 2>&1 &
  _pid=$!
  _i=0
  while ! { [ -f "$_file" ] && { [ -z "${STOP_GREP:-}" ] || grep -q "$STOP_GREP" "$_file"; }; }; do
    _i=$((_i + 1))
    if [ $_i -gt $((_limit * 100)) ] || ! kill -0 $_pid 2>/dev/null; then break; fi
    sleep 0.01
  done
  kill -s "$_sig" $_pid 2>/dev/null || true
  STOP_RC=0
  wait $_pid 2>/dev/null || STOP_RC=$?
}

# find_hf_python: sets HF_PY to a Python that imports torch and transformers ($UNIF_HF_PYTHON, the
# pypi toolchain's .cache/venv-pypi, .cache/hf-families-venv; run from the source root), "" if none.
find_hf_python() {
  HF_PY=""
  for _p in "${UNIF_HF_PYTHON:-}" .cache/venv-pypi/bin/python .cache/hf-families-venv/bin/python; do
    if [ -n "$_p" ] && [ -x "$_p" ] && "$_p" -c 'import torch, transformers' 2>/dev/null; then
      HF_PY=$_p
      return
    fi
  done
}

test_setup() {
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  fails=0
}
ok() { echo "ok   $*"; }

# expect_usage_error WHAT PATTERN COMMAND [ARGS...]: COMMAND must exit 2 with an `error:` line on
# stderr matching PATTERN (a grep pattern); an ok or fail line either way.
expect_usage_error() {
  _what=$1 _pattern=$2
  shift 2
  "$@" > "$tmp/out" 2> "$tmp/err"
  _rc=$?
  if [ $_rc = 2 ] && grep -q "^error: .*$_pattern" "$tmp/err"; then ok "$_what"; else fail "$_what (exit $_rc): $(cat "$tmp/err")"; fi
}
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
