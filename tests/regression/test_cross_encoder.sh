#!/bin/sh
# A pair model trained by unif is a sentence-transformers CrossEncoder: `CrossEncoder(final/)` of
# sentence-transformers 6.3.0 (PyPI, installed into the pypi toolchain's .cache/venv-pypi beside its
# torch and transformers) scores (question, paragraph) pairs as unif does: a 2-label classifier's
# logits equal `unif predict`'s, a regression model's sigmoid (CrossEncoder's default activation
# for one label) equals the sigmoid of unif's value, and CrossEncoder.rank orders the candidates as
# `unif serve`'s /rerank does. Skipped (exit 77) without that environment (scripts/pypi_torch.sh
# makes it; .ci/run does).
# Usage: test_cross_encoder.sh UNIF_BINARY SOURCE_DIR
set -u
UNIF=$1
cd "$2"
SRC=$PWD
. tests/regression/serve_lib.sh  # $tmp, ok/fail, serve_start/serve_stop
venv=${UNIF_PYPI_VENV:-$SRC/.cache/venv-pypi}
if [ ! -f "$venv/.unif-pin" ] || ! "$venv/bin/python" -c 'import torch, transformers' 2>/dev/null; then
  echo "skipped: no $venv with torch and transformers (scripts/pypi_torch.sh installs it)"
  exit 77
fi
if ! "$venv/bin/python" -c 'import sentence_transformers' 2>/dev/null; then
  "$venv/bin/pip" install --disable-pip-version-check -q sentence-transformers==6.3.0 > "$tmp/pip.log" 2>&1 ||
    { cat "$tmp/pip.log"; fail "pip install sentence-transformers==6.3.0 into $venv"; exit 1; }
fi

# 64 training pairs and 8 queries of 8 candidates (data/xquad_en_ranking).
head -n 64 data/xquad_en_ranking/train.jsonl > "$tmp/train.jsonl"
head -n 8 data/xquad_en_ranking/dev.jsonl > "$tmp/dev.jsonl"
python3 - "$tmp/dev.jsonl" "$tmp/pairs.jsonl" <<'PY'
import json, sys
with open(sys.argv[2], "w") as out:
    for line in open(sys.argv[1]):
        g = json.loads(line)
        for t in g["texts"]:
            out.write(json.dumps([g["query"], t], ensure_ascii=False) + "\n")
PY
python3 - "$tmp/train.jsonl" "$tmp/train_scores.jsonl" <<'PY'
import json, sys
with open(sys.argv[2], "w") as out:
    for line in open(sys.argv[1]):
        r = json.loads(line)
        r["label"] = float(r["label"])
        out.write(json.dumps(r, ensure_ascii=False) + "\n")
PY
for kind in classification regression; do
  data=$tmp/train.jsonl
  [ $kind = regression ] && data=$tmp/train_scores.jsonl
  cat > "$tmp/$kind.yaml" <<YAML
task: $kind
output_dir: $tmp/$kind
seed: 7
model:
  pretrained: tests/fixtures/tiny-bert-zh
  max_seq_length: 64
  truncate_method: longest_first
data:
  train: $data
  text_fields: [text_a, text_b]
  label_field: label
training: {batch_size: 16, max_steps: 8, optimizer: {name: adamw, lr: 1.0e-3}, log_every: 4}
YAML
  "$UNIF" train "$tmp/$kind.yaml" > "$tmp/$kind.log" 2>&1 || { cat "$tmp/$kind.log"; fail "unif train ($kind)"; continue; }
  "$UNIF" predict --model "$tmp/$kind/final" --input "$tmp/pairs.jsonl" > "$tmp/$kind.pred" 2> "$tmp/$kind.err" ||
    { cat "$tmp/$kind.err"; fail "unif predict ($kind)"; continue; }
  "$venv/bin/python" - "$kind" "$tmp/$kind/final" "$tmp/pairs.jsonl" "$tmp/$kind.pred" <<'PY' &&
import json, math, sys
from sentence_transformers import CrossEncoder
kind, model_dir = sys.argv[1], sys.argv[2]
pairs = [json.loads(l) for l in open(sys.argv[3])]
ours = [json.loads(l) for l in open(sys.argv[4])]
ce = CrossEncoder(model_dir, max_length=64)
scores = ce.predict(pairs, batch_size=16)
worst = 0.0
for got, want in zip(ours, scores):
    if kind == "classification":
        mine = got["logits"]
        theirs = [float(x) for x in want]
    else:
        mine = [1 / (1 + math.exp(-got["value"]))]
        theirs = [float(want)]
    worst = max(worst, max(abs(a - b) for a, b in zip(mine, theirs)))
print(f"{kind}: {len(pairs)} pairs, max |unif - CrossEncoder| = {worst:.2e}")
assert len(ours) == len(pairs) == len(scores)
assert worst < 1e-5, worst
PY
    ok "CrossEncoder(final/).predict gives unif's scores ($kind)" || fail "CrossEncoder's scores ($kind)"
done

# CrossEncoder.rank's order is /rerank's (the classification model: score = logit 1 - logit 0).
serve_start --model "$tmp/classification/final"
"$venv/bin/python" - "$PORT" "$tmp/classification/final" "$tmp/dev.jsonl" <<'PY' && ok "CrossEncoder.rank orders as /rerank" || fail "rank order"
import json, sys, urllib.request
from sentence_transformers import CrossEncoder
port, model_dir = sys.argv[1], sys.argv[2]
ce = CrossEncoder(model_dir, max_length=64)
for line in open(sys.argv[3]):
    g = json.loads(line)
    req = urllib.request.Request(f"http://127.0.0.1:{port}/rerank", method="POST",
                                 data=json.dumps({"query": g["query"], "texts": g["texts"], "raw_scores": True}).encode(),
                                 headers={"Content-Type": "application/json"})
    ours = [r["index"] for r in json.load(urllib.request.urlopen(req))]
    logits = ce.predict([[g["query"], t] for t in g["texts"]])
    margin = [float(l[1] - l[0]) for l in logits]
    theirs = sorted(range(len(margin)), key=lambda i: -margin[i])
    assert ours == theirs, (ours, theirs, margin)
PY
serve_stop
[ "$fails" -eq 0 ]
