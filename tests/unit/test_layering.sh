#!/bin/sh
# The include layering (scripts/check_layering.py): the sources pass, and an upward include in a
# copy of a room (models/ or inference reaching into the trainer, ...) fails naming the file, the
# line and the edge.
# Usage: test_layering.sh SOURCE_DIR
set -u
src=$1
python3 "$src/scripts/check_layering.py" "$src" || { echo "FAIL: the sources include against the layering"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/models/bert" "$tmp/adversarial" "$tmp/framework/inference"
printf '#pragma once\n#include "framework/common/error.h"\n#include "framework/train/trainer.h"\n' > "$tmp/models/bert/x.h"
printf '#include "framework/engines/gradient_engine.h"\n#include "framework/train/build.h"\n' > "$tmp/adversarial/y.cpp"
# Inference stands on framework/model, not on the trainer.
printf '#include "framework/model/evaluate.h"\n#include "framework/train/trainer.h"\n' > "$tmp/framework/inference/z.cpp"
if python3 "$src/scripts/check_layering.py" "$tmp" > "$tmp/out"; then
  echo "FAIL: upward includes were accepted"; exit 1
fi
grep -q '^models/bert/x.h:3: models includes framework/train/trainer.h' "$tmp/out" &&
  grep -q '^adversarial/y.cpp:2: adversarial includes framework/train/build.h' "$tmp/out" &&
  grep -q '^framework/inference/z.cpp:2: framework/inference includes framework/train/trainer.h' "$tmp/out" &&
  [ "$(grep -c ':[0-9]*: ' "$tmp/out")" -eq 3 ] || { echo "FAIL: the offences are not named:"; cat "$tmp/out"; exit 1; }
echo "layering: 1 passed, 0 failed"
