#!/bin/sh
# model.crf through the command line, on weibo_ner_zh with the tiny BERT: `unif train` learns (entity
# F1 above all-"O"'s 0), train.log says which moves the BIO scheme forbids, the saved directory holds
# crf.transitions / crf.start_transitions / crf.end_transitions (pytorch-crf's names and shapes) with
# the forbidden moves at -10000, `unif predict` answers only valid BIO sequences (the Viterbi path),
# `unif eval` gives the run's last dev F1 again, and where a Python with torch and transformers is
# found, HF's AutoModelForTokenClassification loads the directory and the Viterbi path computed in
# Python from its emissions and the saved crf.* equals unif's tags. A CRF on another task, and a CRF
# with training.loss options, are `error:` lines naming the key.
# Usage: test_crf_cli.sh UNIF_BINARY SOURCE_DIR
set -u
UNIF=$1
cd "$2"
. tests/regression/lib.sh
test_setup

head -n 60 data/weibo_ner_zh/dev.jsonl > "$tmp/dev.jsonl"
"$UNIF" train configs/token_classification.yaml --set model.crf=true --set "output_dir=$tmp/run" \
  --set adversarial.method=none --set training.epochs=3 --set training.log_every=40 --set "data.dev=$tmp/dev.jsonl" \
  --set training.resume=never > "$tmp/train.log" 2>&1 || { cat "$tmp/train.log"; echo "FAIL unif train with model.crf"; exit 1; }
grep -q "model.crf: BIO tags" "$tmp/train.log" && ok "train.log names the BIO scheme" || fail "train.log: $(grep -i crf "$tmp/train.log")"

python3 - "$tmp/run" "$tmp/dev.jsonl" <<'PY' && ok "crf.* saved with pytorch-crf's names and shapes, forbidden moves at -10000; F1 > 0" || fail "the saved CRF or the dev F1"
import json, struct, sys
run = sys.argv[1]
with open(run + "/final/model.safetensors", "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
labels = json.load(open(run + "/final/config.json"))["id2label"]
c = len(labels)
shapes = {k: header[k]["shape"] for k in ("crf.transitions", "crf.start_transitions", "crf.end_transitions")}
assert shapes == {"crf.transitions": [c, c], "crf.start_transitions": [c], "crf.end_transitions": [c]}, shapes
assert all(h["dtype"] == "F32" for k, h in header.items() if k.startswith("crf.")), header
# The values: I-X after O is forbidden (row O, column I-X), I-X first too.
with open(run + "/final/model.safetensors", "rb") as f:
    f.seek(8 + n)
    data = f.read()
def tensor(name):
    b, e = header[name]["data_offsets"]
    return struct.unpack("<%df" % ((e - b) // 4), data[b:e])
names = [labels[str(i)] for i in range(c)]
trans, start = tensor("crf.transitions"), tensor("crf.start_transitions")
o = names.index("O")
inside = [i for i, n in enumerate(names) if n.startswith("I-")]
assert inside, names
for i in inside:
    assert trans[o * c + i] < -9000, (names[i], trans[o * c + i])
    assert start[i] < -9000, (names[i], start[i])
allowed = [trans[names.index("B-" + names[i][2:]) * c + i] for i in inside if "B-" + names[i][2:] in names]
assert all(v > -100 for v in allowed), allowed
dev = [json.loads(l) for l in open(run + "/metrics.jsonl") if '"split":"dev"' in l]
assert dev and max(d["f1"] for d in dev) > 0.0, dev
PY

"$UNIF" predict --model "$tmp/run/final" --input "$tmp/dev.jsonl" > "$tmp/pred.jsonl" 2> "$tmp/pred.err" ||
  { cat "$tmp/pred.err"; fail "unif predict"; }
python3 - "$tmp/pred.jsonl" <<'PY' && ok "predict: every tag sequence is valid BIO" || fail "predict's tags"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 60, len(rows)
entities = 0
for r in rows:
    prev = "O"
    for t in r["tags"]:
        if t is None:  # a word without a piece (no tag): the path goes on past it
            continue
        if t.startswith("I-"):
            assert prev in ("B-" + t[2:], t), (prev, t, r["tags"])
        prev = t
    entities += sum(1 for t in r["tags"] if t is not None and t.startswith("B-"))
print("entities predicted:", entities)
PY

"$UNIF" eval --model "$tmp/run/final" --data "$tmp/dev.jsonl" > "$tmp/eval.json" 2> "$tmp/eval.err" || { cat "$tmp/eval.err"; fail "unif eval"; }
python3 - "$tmp/eval.json" "$tmp/run/metrics.jsonl" <<'PY' && ok "eval's F1 is the run's last dev F1" || fail "eval's F1"
import json, sys
got = json.load(open(sys.argv[1]))
dev = [json.loads(l) for l in open(sys.argv[2]) if '"split":"dev"' in l]
assert abs(got["f1"] - dev[-1]["f1"]) < 1e-9, (got["f1"], dev[-1]["f1"])
PY

find_hf_python
if [ -n "$HF_PY" ]; then
  "$HF_PY" - "$tmp/run/final" "$tmp/dev.jsonl" "$tmp/pred.jsonl" <<'PY' && ok "HF loads the directory; Viterbi on its emissions and crf.* gives unif's tags" || fail "HF's reading"
import json, sys
import torch
from safetensors.torch import load_file
from transformers import AutoModelForTokenClassification, AutoTokenizer
d = sys.argv[1]
model = AutoModelForTokenClassification.from_pretrained(d).eval()
tok = AutoTokenizer.from_pretrained(d)
crf = {k: v.double() for k, v in load_file(d + "/model.safetensors").items() if k.startswith("crf.")}
id2label = model.config.id2label
rows = [json.loads(l) for l in open(sys.argv[2])]
preds = [json.loads(l) for l in open(sys.argv[3])]
checked = 0
for row, pred in zip(rows, preds):
    enc = tok(row["tokens"], is_split_into_words=True, return_tensors="pt")
    if enc["input_ids"].shape[1] > 64:  # unif tags longer inputs in windows: not one Viterbi path
        continue
    with torch.no_grad():
        em = model(**enc).logits[0].double()
    words = enc.word_ids()
    firsts = [i for i, w in enumerate(words) if w is not None and (i == 0 or words[i - 1] != w)]
    if not firsts:  # no word has a piece: no tag at all
        assert all(t is None for t in pred["tags"]), pred["tags"]
        continue
    e = em[firsts]
    score = crf["crf.start_transitions"] + e[0]
    back = []
    for t in range(1, len(firsts)):
        s = score.unsqueeze(1) + crf["crf.transitions"] + e[t].unsqueeze(0)
        score, idx = s.max(0)
        back.append(idx)
    best = [int((score + crf["crf.end_transitions"]).argmax())]
    for idx in reversed(back):
        best.append(int(idx[best[-1]]))
    tags = [id2label[i] for i in reversed(best)]
    got = [t for t in pred["tags"] if t is not None]  # the words that have pieces
    assert tags == got, (tags, pred["tags"])
    checked += 1
assert checked >= len(rows) // 2, checked
print("rows compared with HF:", checked)
PY
else
  echo "note: no Python with torch and transformers: HF's reading of the directory is not checked"
fi

# Bad inputs: each an error naming its key.
"$UNIF" train configs/demo.yaml --set model.crf=true --set "output_dir=$tmp/bad1" > "$tmp/bad1.log" 2>&1
grep -q "^error:.*model.crf" "$tmp/bad1.log" && ok "model.crf on task classification: an error naming model.crf" ||
  fail "model.crf on classification: $(cat "$tmp/bad1.log")"
"$UNIF" train configs/token_classification.yaml --set model.crf=true --set training.loss.label_smoothing=0.1 \
  --set "output_dir=$tmp/bad2" > "$tmp/bad2.log" 2>&1
grep -q "^error:.*training.loss" "$tmp/bad2.log" && ok "model.crf with label smoothing: an error naming training.loss" ||
  fail "model.crf with training.loss: $(cat "$tmp/bad2.log")"
[ "$fails" -eq 0 ]
