#!/bin/sh
# ELECTRA pretraining (task: replaced_token_detection) through the command line, from
# configs/objectives/electra_pretraining.yaml shrunk to a small model and a few steps: final/ holds
# discriminator/ and generator/, each complete, the generator's embeddings the discriminator's; a run
# resumed from a checkpoint ends bitwise as the uninterrupted one; the generator fills masks, the
# pair's folder and the discriminator are refused by eval with what to do instead; a previous run's
# final/ continues both models; the discriminator fine-tunes for classification. With HF
# transformers in a test environment, HF loads both directories with every weight, and its
# generator's fill-mask probabilities are unif predict's. One test per class of bad input.
# Usage: test_electra_pretraining_cli.sh UNIF_BINARY SOURCE_DIR
set -u
UNIF=$1
cd "$2"
. tests/regression/lib.sh
test_setup

pretrain() {  # pretrain OUTPUT_DIR ARGS...
  out=$1
  shift
  "$UNIF" train configs/objectives/electra_pretraining.yaml --set "output_dir=$out" --set model.config.embedding_size=16 \
    --set model.config.hidden_size=32 --set model.config.num_hidden_layers=2 --set model.config.num_attention_heads=4 \
    --set model.config.intermediate_size=64 --set model.max_seq_length=32 --set training.batch_size=16 \
    --set training.max_steps=8 --set training.save_every=4 --set training.eval_every=4 "$@"
}
pretrain "$tmp/p" --set training.resume=never > "$tmp/p.log" 2>&1 || { cat "$tmp/p.log"; echo "FAIL pretraining"; exit 1; }
grep -q "replaced_token_detection: generator hidden_size 8, 2 layers, 1 heads; discriminator hidden_size 32; embeddings shared; loss = MLM + 50 \* RTD" \
  "$tmp/p.log" && ok "train.log describes the pair" || fail "train.log: $(grep replaced_token "$tmp/p.log")"
grep -q "dev @ step 8: loss=.* mlm_accuracy=.* mlm_loss=.* rtd_accuracy=.* rtd_loss=.* rtd_replaced_share=" "$tmp/p.log" &&
  ok "dev reports the generator's and the discriminator's metrics" || fail "dev line: $(grep 'dev @' "$tmp/p.log")"

python3 - "$tmp/p" <<'PY' && ok "final/: two complete HF directories, the generator's embeddings the discriminator's" || fail "final/"
import json, os, struct, sys
run = sys.argv[1]
def tensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    return {k: (v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]]) for k, v in header.items() if k != "__metadata__"}
for d in ("final", "best", "checkpoints/step-8"):
    for sub in ("discriminator", "generator"):
        assert os.path.exists(f"{run}/{d}/{sub}/COMPLETE"), (d, sub)
    assert os.path.exists(f"{run}/{d}/COMPLETE"), d
disc = tensors(f"{run}/final/discriminator/model.safetensors")
gen = tensors(f"{run}/final/generator/model.safetensors")
assert json.load(open(f"{run}/final/discriminator/config.json"))["architectures"] == ["ElectraForPreTraining"]
gc = json.load(open(f"{run}/final/generator/config.json"))
assert gc["architectures"] == ["ElectraForMaskedLM"] and gc["hidden_size"] == 8 and gc["embedding_size"] == 16, gc
shared = [k for k in disc if k.startswith("electra.embeddings.")]
assert len(shared) == 5, shared
for k in shared:
    assert gen[k] == disc[k], k
assert "discriminator_predictions.dense_prediction.weight" in disc and "generator_lm_head.bias" in gen
assert "electra.embeddings_project.weight" in gen and gen["electra.embeddings_project.weight"][0] == [8, 16]
assert "task: masked_lm" in open(f"{run}/final/generator/unif.yaml").read()
PY

# Resumed from the first checkpoint: the same final weights, both models.
cp -r "$tmp/p" "$tmp/r"
rm -rf "$tmp/r/final" "$tmp/r/best" "$tmp/r/checkpoints/step-8"
pretrain "$tmp/r" --set "training.resume=$tmp/r/checkpoints/step-4" > "$tmp/r.log" 2>&1 || { cat "$tmp/r.log"; fail "the resumed half"; }
grep -q "resumed from" "$tmp/r.log" || fail "no resume: $(tail -3 "$tmp/r.log")"
cmp -s "$tmp/p/final/discriminator/model.safetensors" "$tmp/r/final/discriminator/model.safetensors" &&
  cmp -s "$tmp/p/final/generator/model.safetensors" "$tmp/r/final/generator/model.safetensors" &&
  ok "resumed: both models bitwise the uninterrupted run's" || fail "a resume changed the weights"

echo '{"text": "我们[MASK]公园散步"}' > "$tmp/fill.jsonl"
"$UNIF" predict --model "$tmp/p/final/generator" --input "$tmp/fill.jsonl" --output "$tmp/fill.out" 2> "$tmp/err" &&
  grep -q '"masks":\[{"scores":\[' "$tmp/fill.out" && ok "the generator fills masks" || fail "predict: $(cat "$tmp/err")"
"$UNIF" eval --model "$tmp/p/final" --data data/sib200_zh/dev.jsonl > /dev/null 2> "$tmp/err"
[ $? = 2 ] && grep -q "holds ELECTRA pretraining's two models: use .*/generator" "$tmp/err" &&
  ok "eval on the pair's folder names the two models" || fail "eval final/: $(cat "$tmp/err")"
"$UNIF" eval --model "$tmp/p/final/discriminator" --data data/sib200_zh/dev.jsonl > /dev/null 2> "$tmp/err"
[ $? = 2 ] && grep -q "is an ELECTRA discriminator (ElectraForPreTraining): it is fine-tuned" "$tmp/err" &&
  ok "eval on the discriminator says it is for fine-tuning" || fail "eval discriminator/: $(cat "$tmp/err")"

# Going on from the pair: both models are read back.
pretrain "$tmp/c" --set training.resume=never --set "model.pretrained=$tmp/p/final" --set model.vocab=null \
  --set "model.config={}" > "$tmp/c.log" 2>&1 || { cat "$tmp/c.log"; fail "continuing from final/"; }
grep -q "All the weights of ElectraForPreTraining were initialized" "$tmp/c.log" &&
  grep -q "replaced_token_detection: generator from $tmp/p/final/generator" "$tmp/c.log" &&
  ok "a previous run's final/ continues both models" || fail "continue: $(grep -E 'weights|generator' "$tmp/c.log")"

# The discriminator is the encoder to fine-tune.
"$UNIF" train configs/classification.yaml --set "output_dir=$tmp/ft" --set "model.pretrained=$tmp/p/final/discriminator" \
  --set "model.bert={}" --set training.max_steps=2 --set training.resume=never > "$tmp/ft.log" 2>&1 &&
  grep -q "were not used when initializing ElectraForSequenceClassification: \[discriminator_predictions" "$tmp/ft.log" &&
  ok "the discriminator fine-tunes for classification" || fail "fine-tuning: $(tail -3 "$tmp/ft.log")"

find_hf_python
if [ -n "$HF_PY" ]; then
  "$UNIF" predict --model "$tmp/p/final/generator" --input "$tmp/fill.jsonl" --top-k 5 --output "$tmp/fill5.out" 2> "$tmp/err"
  "$HF_PY" - "$tmp/p/final" "$tmp/fill5.out" <<'PY' && ok "HF loads both with every weight; its fill-mask is unif's" || fail "HF"
import json, sys, torch
from transformers import BertTokenizer, ElectraForMaskedLM, ElectraForPreTraining
final, unif_out = sys.argv[1], sys.argv[2]
disc, info = ElectraForPreTraining.from_pretrained(final + "/discriminator", output_loading_info=True)
assert not info["missing_keys"] and not info["unexpected_keys"], info
gen, info = ElectraForMaskedLM.from_pretrained(final + "/generator", output_loading_info=True)
assert not info["missing_keys"] and not info["unexpected_keys"], info
assert torch.equal(gen.electra.embeddings.word_embeddings.weight, disc.electra.embeddings.word_embeddings.weight)
tok = BertTokenizer.from_pretrained(final + "/generator")
enc = tok("我们[MASK]公园散步", return_tensors="pt")
with torch.no_grad():
    logits = gen.eval()(**enc).logits[0]
at = (enc["input_ids"][0] == tok.mask_token_id).nonzero()[0, 0]
top = logits[at].softmax(-1).topk(5)
ours = json.loads(open(unif_out).readline())["masks"][0]
assert ours["tokens"] == tok.convert_ids_to_tokens(top.indices.tolist()), (ours, top)
assert max(abs(a - b) for a, b in zip(ours["scores"], top.values.tolist())) < 1e-5, (ours, top)
PY
else
  echo "skip HF transformers is not installed here (scripts/test.sh installs it in .cache/venv-pypi)"
fi

expect_error() {  # expect_error WHAT PATTERN ARGS...
  _w=$1 _p=$2
  shift 2
  expect_usage_error "$_w" "$_p" pretrain "$tmp/bad" --set training.resume=overwrite "$@"
}
expect_error "a BERT model" "ELECTRA models only (model_type electra), and tests/fixtures/tiny-bert-zh is a bert model" \
  --set model.pretrained=tests/fixtures/tiny-bert-zh --set model.vocab=null --set "model.config={}"
expect_error "an unknown generator field" "model.generator.config.hiden_size: not a field .* (did you mean 'hidden_size'?)" \
  --set "model.generator.config={hiden_size: 8}"
expect_error "a generator whose embeddings cannot be shared" "embedding_size must be the discriminator's 16, got 32" \
  --set "model.generator.config={embedding_size: 32}"
expect_error "generator heads that do not divide its width" "model.generator.config" \
  --set "model.generator.config={num_attention_heads: 3}"
expect_error "a generator config beside a pair that has one" "the generator is read from .*generator" \
  --set "model.pretrained=$tmp/p/final" --set model.vocab=null --set "model.config={}" \
  --set "model.generator.config={hidden_size: 8}"

[ $fails = 0 ] || { echo "$fails failed"; exit 1; }
echo "all ELECTRA pretraining CLI checks passed"
