#!/bin/sh
# The C++ API example (apps/textcnn_example): a TextCNN trained by unif's Trainer on sib200_zh must
# beat the majority-class baseline on dev by a margin, plain and with fgm (it exposes its word
# embeddings). Usage: test_textcnn_example.sh TEXTCNN_BINARY SOURCE_DIR
# Runs 6 epochs (the example's config says 10) and saves checkpoints only at the end, to stay near 40 s.
# Measured on the shared 2-core machine (seed 42, batch 32, AdamW lr 2e-3, final model, 99 dev examples,
# majority class 25/99 = 0.2525):
#   6 epochs:  plain 0.4646, fgm (epsilon 0.05) 0.5253                   -> MARGIN 0.15 (0.2525 + 0.15 = 0.4025)
#   10 epochs: plain 0.5960 (best 0.6061)
#   negative controls (10 epochs, the bar would fail): lr 1e-9 -> 0.1212; labels shuffled across the
#   training set -> 0.1414 (train loss still falls to ~0.8: it memorises, dev stays at chance).
set -eu
BIN=$1
cd "$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
MARGIN=0.15

check() {
  name=$1
  shift
  if ! "$BIN" apps/textcnn_example/textcnn.yaml --set "output_dir=$tmp/$name" --set training.epochs=6 \
      --set training.save_every=1000 "$@" > "$tmp/$name.out" 2> "$tmp/$name.log"; then
    echo "FAIL ($name): textcnn_example exited non-zero"; tail -20 "$tmp/$name.log"; exit 1
  fi
  line=$(tail -1 "$tmp/$name.out")
  acc=$(echo "$line" | sed -n 's/.*"dev_accuracy":\([0-9.eE+-]*\).*/\1/p')
  base=$(echo "$line" | sed -n 's/.*"majority_baseline":\([0-9.eE+-]*\).*/\1/p')
  echo "$name: dev accuracy $acc, majority baseline $base (required margin $MARGIN)"
  if [ -z "$acc" ] || [ -z "$base" ]; then echo "FAIL ($name): no result line: $line"; exit 1; fi
  if ! awk -v a="$acc" -v b="$base" -v m="$MARGIN" 'BEGIN { exit !(a >= b + m) }'; then
    echo "FAIL ($name): dev accuracy $acc is not $MARGIN above the majority baseline $base"; exit 1
  fi
  for f in final/COMPLETE final/model.safetensors best/COMPLETE; do
    [ -f "$tmp/$name/$f" ] || { echo "FAIL ($name): $f missing"; exit 1; }
  done
}

check plain
check fgm --set adversarial.method=fgm --set adversarial.epsilon=0.05
echo "ok"
