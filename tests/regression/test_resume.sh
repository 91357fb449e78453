#!/bin/sh
# Exact resume: train N steps straight vs. train, stop in the middle, resume (resume: auto) ->
# bit-identical final parameters. Dropout stays on, so the RNG state must be restored too.
# SIGNAL=KILL (default): SIGKILL once checkpoint step-10 is complete (the run loses what came after).
# SIGNAL=INT: Ctrl-C once step-5 is complete: the run must save a checkpoint where it stopped, say
# so, exit 130, and the resumed run must still end bit-identical.
# Usage: test_resume.sh UNIF_BINARY SOURCE_DIR [--set a.b=v ...]  (extra overrides for both runs, no spaces)
set -eu
UNIF=$1
cd "$2"
shift 2
EXTRA="$*"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib.sh"
EXEC=
run() {
  $EXEC "$UNIF" train configs/demo.yaml --set training.max_steps=40 --set training.save_every=5 \
    --set training.eval_every=20 --set training.log_every=2 --set training.keep_checkpoints=10 \
    --set training.batch_size=16 --set training.grad_accum_steps=2 --set "output_dir=$1" $EXTRA
}
run "$tmp/straight" > "$tmp/straight.log" 2>&1

SIGNAL=${SIGNAL:-KILL}
if [ "$SIGNAL" = INT ]; then
  stop_midway INT "$tmp/killed/checkpoints/step-5/COMPLETE" 30 "$tmp/killed1.log" run "$tmp/killed"
else
  # Killed once step 12 is logged: the newest checkpoint is step 10, so metrics.jsonl holds lines
  # past it that the resumed run must drop rather than repeat.
  STOP_GREP='"step":12[,}]' stop_midway KILL "$tmp/killed/metrics.jsonl" 30 "$tmp/killed1.log" run "$tmp/killed"
fi
rc=$STOP_RC
if [ -f "$tmp/killed/final/COMPLETE" ]; then
  echo "FAIL: the first run finished before it could be stopped; the test proves nothing"
  exit 1
fi
if [ "$SIGNAL" = KILL ] && [ "$rc" -ne 137 ]; then
  echo "FAIL: the first run was not killed by SIGKILL (exit status $rc)"; cat "$tmp/killed1.log"; exit 1
fi
if [ "$SIGNAL" = INT ]; then
  # A clean stop: exit code 130, a log line naming the step, that step's checkpoint complete.
  [ "$rc" -eq 130 ] || { echo "FAIL: Ctrl-C: exit code $rc, expected 130"; cat "$tmp/killed1.log"; exit 1; }
  line=$(grep "interrupted: checkpoint saved at step" "$tmp/killed1.log") ||
    { echo "FAIL: Ctrl-C: no 'interrupted' line"; cat "$tmp/killed1.log"; exit 1; }
  echo "$line"
  step=$(echo "$line" | sed 's/.*saved at step \([0-9]*\).*/\1/')
  [ -f "$tmp/killed/checkpoints/step-$step/COMPLETE" ] ||
    { echo "FAIL: Ctrl-C: checkpoint step-$step is not complete"; ls -R "$tmp/killed"; exit 1; }
fi
run "$tmp/killed" > "$tmp/killed2.log" 2>&1
grep -q "resumed from" "$tmp/killed2.log" || { echo "FAIL: the second run did not resume"; cat "$tmp/killed2.log"; exit 1; }
grep "resumed from" "$tmp/killed2.log"
# metrics.jsonl reads as if the run had never stopped: the same (split, step) lines in the same order
# (the killed run's lines after its checkpoint are dropped on resume, not repeated).
steps() { sed -E 's/.*"split":"([a-z]+)".*"step":([0-9]+).*/\1 \2/' "$1"; }
if [ "$(steps "$tmp/straight/metrics.jsonl")" != "$(steps "$tmp/killed/metrics.jsonl")" ]; then
  echo "FAIL: metrics.jsonl of the resumed run differs from the straight run's (split, step) lines"
  diff "$tmp/straight/metrics.jsonl" "$tmp/killed/metrics.jsonl" || true
  exit 1
fi
if cmp "$tmp/straight/final/model.safetensors" "$tmp/killed/final/model.safetensors"; then
  echo "PASS: resumed run is bit-identical to the straight run"
else
  echo "FAIL: final parameters differ after resume"
  exit 1
fi
