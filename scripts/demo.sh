#!/usr/bin/env bash
# Installs what is missing, builds, then fine-tunes the bundled tiny BERT on real data
# (configs/demo.yaml: SIB-200 Chinese topic classification), evaluates and predicts.
# UNIF_TORCH=pypi: the PyPI wheel's build (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/toolchain.sh
scripts/setup.sh
UNIF=$BUILD_DIR/bin/unif
OUT=runs/demo

echo
echo "== unif tokenize =="
printf '今天天气很好\nunif-cpp tokenizes like HuggingFace!\n' | $UNIF tokenize --vocab tests/fixtures/tiny-bert-zh/vocab.txt

echo
echo "== unif train configs/demo.yaml =="
rm -rf "$OUT"   # the demo always starts fresh
$UNIF train configs/demo.yaml --set output_dir=$OUT

echo
echo "== unif eval (dev metrics of the final model) =="
$UNIF eval configs/demo.yaml --model $OUT/final
total=$(grep -c '' data/sib200_zh/dev.jsonl)
majority=$(grep -o '"label":"[^"]*"' data/sib200_zh/dev.jsonl | sort | uniq -c | sort -rn | head -n 1 | awk '{print $1}')
awk -v m="$majority" -v t="$total" 'BEGIN { printf "majority-class baseline: accuracy=%.4f\n", m / t }'

echo
echo "== unif predict (first 3 dev lines) =="
head -n 3 data/sib200_zh/dev.jsonl > $OUT/predict_in.jsonl
$UNIF predict --model $OUT/final --input $OUT/predict_in.jsonl | cut -c1-200
