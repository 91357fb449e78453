#!/bin/sh
# What `unif train` shows on a terminal and what it keeps: under a pseudo-terminal (script(1)) the
# step line moves behind a progress bar every step; train.log and a redirected stderr get the plain
# step lines without a bar; the run's last lines restate the best dev result with best/'s path.
# Usage: test_terminal.sh UNIF_BINARY SOURCE_DIR
set -u
UNIF=$1
cd "$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
ok() { echo "ok   $*"; }
command -v script > /dev/null || { echo "FAIL script(1) (bsdutils) is not installed"; exit 1; }
args="configs/demo.yaml --set training.max_steps=12 --set training.eval_every=6 --set training.log_every=4"

# shellcheck disable=SC2086
script -qec "\"$UNIF\" train $args --set output_dir=$tmp/tty" /dev/null > "$tmp/tty.out" 2>&1 ||
  { cat "$tmp/tty.out"; fail "train under a terminal exited non-zero"; }
bars=$(tr '\r' '\n' < "$tmp/tty.out" | grep -c '^.*\[[#-]\{20\}\] *[0-9]*% step [0-9]*/12')
# a bar every step: 12 steps, the logged ones and the ticks between them
if [ "$bars" -ge 12 ]; then ok "terminal: $bars progress bar updates for 12 steps"; else
  fail "terminal: $bars progress bar updates for 12 steps (expected >= 12)"; fi
if tr '\r' '\n' < "$tmp/tty.out" | grep -q '\[####################\] 100% step 12/12 epoch'; then ok "terminal: the bar ends full"; else
  fail "terminal: no full bar at step 12"; fi
if grep -q '\[[#-]\{20\}\]' "$tmp/tty/train.log"; then fail "train.log holds a progress bar"; else ok "train.log: no bar"; fi
if grep -q '] step 12/12 epoch' "$tmp/tty/train.log"; then ok "train.log: the step lines"; else fail "train.log lacks step 12's line"; fi

# shellcheck disable=SC2086
"$UNIF" train $args --set output_dir="$tmp/plain" > "$tmp/out" 2> "$tmp/err" || { cat "$tmp/err"; fail "train exited non-zero"; }
if grep -q '\[[#-]\{20\}\]' "$tmp/err"; then fail "a redirected stderr holds a progress bar"; else ok "redirected stderr: no bar"; fi
if [ "$(grep -c '] step [0-9]*/12 epoch' "$tmp/err")" -eq 3 ]; then ok "redirected stderr: 3 step lines (log_every 4)"; else
  fail "redirected stderr: $(grep -c '] step [0-9]*/12 epoch' "$tmp/err") step lines (expected 3)"; fi
last2=$(tail -n 2 "$tmp/err")
if echo "$last2" | head -n 1 | grep -Eq "best dev accuracy=[0-9.]+ at step (6|12): $tmp/plain/best\$"; then
  ok "the best dev result restated before 'done'"; else fail "last lines: $last2"; fi
step=$(echo "$last2" | head -n 1 | sed 's/.* at step \([0-9]*\):.*/\1/')
if grep "\"split\": *\"dev\"" "$tmp/plain/metrics.jsonl" | grep -q "\"step\": *$step[,}]"; then ok "best step $step is a dev evaluation"; else
  fail "best step $step has no dev line in metrics.jsonl"; fi
[ "$fails" -eq 0 ] || { echo "$fails failed"; exit 1; }
echo "all passed"
