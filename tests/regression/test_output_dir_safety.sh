#!/bin/sh
# One run per output_dir, recovery of an interrupted replace, resume checks:
# 1. a second `unif train` on a live run's output_dir exits 2 with "is in use by another unif run
#    (pid N)" and the first run finishes normally;
# 2. best/ moved to best.old-PID and the newest checkpoint left as step-N.tmp-PID (a kill between
#    the two renames of a replace / before the publishing rename): the next run restores both and
#    resumes from step N (the old clean-up deleted them and resumed from an older checkpoint);
# 3. a resume whose model or optimizer does not fit the checkpoint is an error naming the file,
#    not a silent partial load; a truncated optimizer.safetensors too.
# Usage: test_output_dir_safety.sh UNIF_BINARY SOURCE_DIR
set -u
UNIF=$1
cd "$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
EXEC=
run() {
  o=$1
  shift
  $EXEC "$UNIF" train configs/demo.yaml --set training.max_steps=120 --set training.save_every=10 \
    --set training.eval_every=10 --set training.log_every=10 --set "output_dir=$o" "$@"
}
out=$tmp/run

# --- 1. the lock ---
(
  EXEC=exec  # the background job is the unif process: $! is its pid
  run "$out"
) > "$tmp/a.log" 2>&1 &
a=$!
i=0
while [ ! -f "$out/checkpoints/step-10/COMPLETE" ] && kill -0 $a 2>/dev/null && [ $i -lt 3000 ]; do
  i=$((i + 1)); sleep 0.01
done
run "$out" > "$tmp/b.out" 2> "$tmp/b.err"
b_rc=$?
kill -0 $a 2>/dev/null || fail "the first run ended before the second was refused; the test proves nothing"
a_rc=0
wait $a || a_rc=$?
if [ $b_rc -ne 2 ] || [ "$(grep -c '' "$tmp/b.err")" -ne 1 ] ||
   ! grep -Eq "^error: output_dir '$out' is in use by another unif run \(pid $a\)$" "$tmp/b.err"; then
  fail "second run on a live output_dir: exit $b_rc, stderr:"; cat "$tmp/b.err"
else
  echo "ok   second run refused: $(cat "$tmp/b.err")"
fi
if [ $a_rc -ne 0 ] || [ ! -f "$out/final/COMPLETE" ]; then
  fail "the first run did not finish normally (exit $a_rc)"; tail -n 5 "$tmp/a.log"
else
  echo "ok   first run finished (exit 0, final/ complete)"
fi

# --- 2. recovery of an interrupted replace ---
[ -f "$out/best/COMPLETE" ] || fail "no best/ after the first run"
mv "$out/best" "$out/best.old-123"
mv "$out/checkpoints/step-120" "$out/checkpoints/step-120.tmp-456"
run "$out" > "$tmp/c.log" 2>&1 || { fail "the recovering run failed"; tail -n 5 "$tmp/c.log"; }
if [ -f "$out/best/COMPLETE" ] && [ ! -e "$out/best.old-123" ] && grep -q "restored $out/best from best.old-123" "$tmp/c.log"; then
  echo "ok   best/ restored from best.old-123"
else
  fail "best/ was not restored from best.old-123"; ls "$out"
fi
if grep -q "resumed from $out/checkpoints/step-120 " "$tmp/c.log" && [ ! -e "$out/checkpoints/step-120.tmp-456" ]; then
  echo "ok   checkpoint step-120 restored and resumed from"
else
  fail "the run did not resume from the restored step-120"; grep "resumed\|restored" "$tmp/c.log"; ls "$out/checkpoints"
fi

# --- 3. resume checks ---
# expect_error NAME PATTERN -- command...: exit 2, the last stderr line is "error: " matching PATTERN.
expect_error() {
  name=$1 pattern=$2
  shift 3
  "$@" > /dev/null 2> "$tmp/err"
  code=$?
  last=$(tail -n 1 "$tmp/err")
  if [ $code -eq 2 ] && echo "$last" | grep -q '^error: ' && echo "$last" | grep -Eq "$pattern"; then
    echo "ok   $name: $last"
  else
    fail "$name: exit $code, last stderr line: $last"
  fi
}
# The run identity stored with the checkpoint refuses both first, naming the key ...
expect_error extra_weights_identity "checkpoints/step-120' was written by a run with other settings \(model\.shape: '41 tensors.*' -> '25 tensors" \
  -- run "$out" --set model.bert.num_hidden_layers=1
expect_error other_optimizer_identity "checkpoints/step-120' was written by a run with other settings \(training\.optimizer\.name: 'adamw' -> 'sgd'\)" \
  -- run "$out" --set training.optimizer.name=sgd --set training.optimizer.momentum=0.9
# ... and a checkpoint without one (an older unif's) still meets the weight and state checks (named
# in training.resume: under auto, the changed keys alone would refuse these runs first).
sed -i '/"identity"/,/^  }/d' "$out/checkpoints/step-120/trainer_state.json"
expect_error extra_weights "checkpoints/step-120: the checkpoint does not fit the model \(.*weight\(s\) the model does not have: bert\.encoder\.layer\.1\." \
  -- run "$out" --set model.bert.num_hidden_layers=1 --set training.resume="$out/checkpoints/step-120"
expect_error other_optimizer "checkpoints/step-120/optimizer\.safetensors: the optimizer state does not fit.*'exp_avg' is not a state of this optimizer" \
  -- run "$out" --set training.optimizer.name=sgd --set training.optimizer.momentum=0.9 \
  --set training.resume="$out/checkpoints/step-120"
head -c 1000 "$out/checkpoints/step-120/optimizer.safetensors" > "$tmp/opt" && mv "$tmp/opt" "$out/checkpoints/step-120/optimizer.safetensors"
expect_error truncated_optimizer "checkpoints/step-120/optimizer\.safetensors" -- run "$out"

[ $fails -eq 0 ] && echo "PASS" || { echo "$fails failure(s)"; exit 1; }
