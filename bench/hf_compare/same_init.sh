#!/usr/bin/env bash
# Training-trajectory parity on a real task: HF transformers and unif start from the same weights
# (the pretrained encoder and the new head as HF initialises it, saved by hf_train.py), train with
# dropout 0 on the same data order, and their per-step training losses and final dev metric are
# compared. hf_compare's seed study compares distributions (each side initialises its own head from
# its own generator); this compares one trajectory: anything that differs beyond float summation
# order (pair tokenization, token types, the head, the loss, AdamW and its groups, the schedule,
# clipping) shows as a gap from the first steps on.
#
#   bench/hf_compare/same_init.sh [CONFIG] [STEPS] [WORK] [-- extra --set KEY=VALUE ...]
#
# Defaults: configs/minilm/pair_classification.yaml, its full schedule (STEPS 0), .cache/same_init.
# Needs build/bin/unif and the venv of bench/hf_compare/run.sh (made by `bench/hf_compare/run.sh --help`).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
config=${1:-$root/configs/minilm/pair_classification.yaml}
steps=${2:-0}
work=${3:-$root/.cache/same_init}
shift $(($# < 3 ? $# : 3))
[ "${1:-}" = "--" ] && shift
extra=()
for kv in "$@"; do extra+=(--set "$kv"); done
unif=${UNIF:-$root/build/bin/unif}
py=$root/.cache/hf-venv/bin/python
[ -x "$unif" ] || { echo "error: $unif not found: build first (scripts/setup.sh)" >&2; exit 2; }
[ -x "$py" ] || { echo "error: $py not found: run bench/hf_compare/run.sh --help once to make the venv" >&2; exit 2; }
export UNIF_HOME=${UNIF_HOME:-$HOME/.cache/unif}
rm -rf "$work"
mkdir -p "$work"
common=(--set model.bert.hidden_dropout_prob=0 --set model.bert.attention_probs_dropout_prob=0
        --set training.log_every=1 "${extra[@]}")
[ "$steps" -gt 0 ] && common+=(--set training.max_steps="$steps")

echo "[same_init] 1/4 resolving the config (a 1-step unif run)"
"$unif" train "$config" "${common[@]}" --set training.max_steps=1 --set output_dir="$work/probe" >"$work/probe.log" 2>&1 ||
  { tail -5 "$work/probe.log" >&2; exit 1; }
echo "[same_init] 2/4 HF initialises the model (seed's head) into $work/init"
HF_SAVE_INIT="$work/init" "$py" "$root/bench/hf_compare/hf_train.py" "$work/probe/config.yaml" /dev/null
echo "[same_init] 3/4 unif trains from it"
"$unif" train "$config" "${common[@]}" --set model.pretrained="$work/init" --set output_dir="$work/unif" \
  >"$work/unif.log" 2>&1 || { tail -5 "$work/unif.log" >&2; exit 1; }
grep -m1 "initialized from the model checkpoint\|newly initialized" "$work/unif.log" || true
echo "[same_init] 4/4 HF trains from it"
"$py" "$root/bench/hf_compare/hf_train.py" "$work/unif/config.yaml" "$work/hf.json"

"$py" - "$work" <<'EOF'
import json, sys
work = sys.argv[1]
unif = [json.loads(l) for l in open(work + "/unif/metrics.jsonl")]
ul = {r["step"]: r["loss"] for r in unif if r.get("split") == "train"}
dev = [r for r in unif if r.get("split") == "dev"]
hf = json.load(open(work + "/hf.json"))
hl = hf["losses"]
n = min(len(hl), max(ul))
print("step   unif loss    HF loss      |diff|")
for s in sorted(set([1, 2, 3, 5, 10, 20, 50, 100, 200, n]) & set(range(1, n + 1))):
    print("%4d   %.6f   %.6f   %.2e" % (s, ul[s], hl[s - 1], abs(ul[s] - hl[s - 1])))
d = [abs(ul[s] - hl[s - 1]) for s in range(1, n + 1)]
print("max |diff| steps 1-10: %.2e; all %d steps: %.2e; mean %.2e" % (max(d[:10]), n, max(d), sum(d) / n))
um = dev[-1] if dev else {}
print("dev: unif", {k: v for k, v in um.items() if k not in ("split", "step", "epoch")})
print("dev: HF  ", hf["metrics"])
EOF
