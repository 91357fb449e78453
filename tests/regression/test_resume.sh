#!/bin/sh
# Exact resume: train N steps straight vs. train, SIGKILL in the middle, resume (resume: auto) ->
# bit-identical final parameters. Dropout stays on, so the RNG state must be restored too.
# Usage: test_resume.sh UNIF_BINARY SOURCE_DIR [--set a.b=v ...]  (extra overrides for both runs, no spaces)
set -eu
UNIF=$1
cd "$2"
shift 2
EXTRA="$*"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() {
  "$UNIF" train configs/demo.yaml --set training.max_steps=40 --set training.save_every=5 \
    --set training.eval_every=20 --set training.log_every=10 --set training.keep_checkpoints=10 \
    --set training.batch_size=16 --set training.grad_accum_steps=2 --set "output_dir=$1" $EXTRA
}
run "$tmp/straight" > "$tmp/straight.log" 2>&1

run "$tmp/killed" > "$tmp/killed1.log" 2>&1 &
pid=$!
i=0
while [ ! -f "$tmp/killed/checkpoints/step-10/COMPLETE" ]; do
  i=$((i + 1))
  if [ $i -gt 3000 ] || ! kill -0 $pid 2>/dev/null; then break; fi
  sleep 0.01
done
kill -9 $pid 2>/dev/null || true
wait $pid 2>/dev/null || true
if [ -f "$tmp/killed/final/COMPLETE" ]; then
  echo "FAIL: the first run finished before it could be killed; the test proves nothing"
  exit 1
fi
run "$tmp/killed" > "$tmp/killed2.log" 2>&1
grep -q "resumed from" "$tmp/killed2.log" || { echo "FAIL: the second run did not resume"; cat "$tmp/killed2.log"; exit 1; }
grep "resumed from" "$tmp/killed2.log"
if cmp "$tmp/straight/final/model.safetensors" "$tmp/killed/final/model.safetensors"; then
  echo "PASS: resumed run is bit-identical to the straight run"
else
  echo "FAIL: final parameters differ after resume"
  exit 1
fi
