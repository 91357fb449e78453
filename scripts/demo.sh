#!/usr/bin/env bash
# Installs what is missing, builds, then shows unif on the bundled tiny checkpoint.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo
echo "== unif tokenize (bundled tiny BERT vocabulary) =="
printf '今天天气很好\nunif-cpp tokenizes like HuggingFace!\n' |
  build/bin/unif tokenize --vocab tests/fixtures/tiny-bert-zh/vocab.txt
