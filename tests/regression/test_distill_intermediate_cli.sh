#!/bin/sh
# distill.intermediate (TinyBERT) through the command line, on sib200_zh: a tiny BERT teacher is
# fine-tuned, then a narrower, shallower student (hidden 16, 1 layer, from scratch) learns from its
# hidden states, attention scores and embeddings (uniform map: student layer 1 <- teacher layer 2)
# through a learned projection to the teacher's width. train.log names the map; final/ holds the
# student alone (no distill_projection); a checkpoint keeps the projection, and a run resumed from
# it ends bitwise as the uninterrupted one. A layer past either model, attention between different
# head counts and the section without a teacher are `error:` lines.
# Usage: test_distill_intermediate_cli.sh UNIF_BINARY SOURCE_DIR
set -u
UNIF=$1
cd "$2"
. tests/regression/lib.sh
test_setup

"$UNIF" train configs/classification.yaml --set "output_dir=$tmp/teacher" --set training.epochs=1 \
  --set training.resume=never > "$tmp/teacher.log" 2>&1 || { cat "$tmp/teacher.log"; echo "FAIL the teacher"; exit 1; }
student() {  # student OUTPUT_DIR ARGS...: the student run
  out=$1
  shift
  "$UNIF" train configs/classification.yaml --set "output_dir=$out" --set "distill.teacher=$tmp/teacher/final" \
    --set "distill.intermediate={}" --set model.pretrained=null --set model.vocab=tests/fixtures/tiny-bert-zh/vocab.txt \
    --set model.bert.hidden_size=16 --set model.bert.num_hidden_layers=1 --set model.bert.num_attention_heads=4 \
    --set model.bert.intermediate_size=32 --set model.bert.max_position_embeddings=64 --set training.epochs=2 "$@"
}
student "$tmp/s" --set training.resume=never > "$tmp/s.log" 2>&1 || { cat "$tmp/s.log"; echo "FAIL the student"; exit 1; }
grep -q "distill.intermediate: student layer <- teacher layer 1<-2; hidden states through distill_projection" \
  "$tmp/s.log" && ok "train.log names the layer map and the projection" || fail "train.log: $(grep distill "$tmp/s.log")"

python3 - "$tmp/s" <<'PY' && ok "final/ is the student alone; the checkpoints keep the projection" || fail "the saved tensors"
import json, struct, sys, glob
def names(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return {k: v["shape"] for k, v in json.loads(f.read(n)).items() if k != "__metadata__"}
final = names(sys.argv[1] + "/final/model.safetensors")
assert not [k for k in final if "distill" in k], final
assert final["bert.embeddings.word_embeddings.weight"][1] == 16, final
for ck in glob.glob(sys.argv[1] + "/checkpoints/step-*"):
    assert names(ck + "/trainer_parameters.safetensors") == {
        "distill_projection.weight": [32, 16], "distill_projection.bias": [32]}, ck
dev = [json.loads(l) for l in open(sys.argv[1] + "/metrics.jsonl") if '"split":"dev"' in l]
assert dev and all(d["loss"] == d["loss"] for d in dev), dev
PY

# Resumed from the first epoch's checkpoint: the same final weights as the run above.
cp -r "$tmp/s" "$tmp/r"
rm -rf "$tmp/r/final" "$tmp/r/best" "$tmp/r/checkpoints/step-88"
student "$tmp/r" --set "training.resume=$tmp/r/checkpoints/step-44" > "$tmp/r2.log" 2>&1 || { cat "$tmp/r2.log"; fail "the resumed half"; }
grep -q "resumed from" "$tmp/r2.log" || fail "no resume: $(tail -3 "$tmp/r2.log")"
cmp -s "$tmp/s/final/model.safetensors" "$tmp/r/final/model.safetensors" &&
  ok "resumed with its projection: final weights bitwise the uninterrupted run's" || fail "a resume changed the weights"

expect_error() {  # expect_error WHAT PATTERN ARGS...
  _w=$1 _p=$2
  shift 2
  expect_usage_error "$_w" "$_p" student "$tmp/bad" --set training.resume=overwrite "$@"
}
expect_error "a layer past the teacher's" "past the student's 1 layers or the teacher's 2" \
  --set "distill.intermediate.layers=[[1, 3]]"
expect_error "attention between 2 and 4 heads" "matched head by head" --set model.bert.num_attention_heads=2
expect_error "intermediate without a teacher" "expected distill.teacher with distill.intermediate" \
  --set distill.teacher=null

[ $fails = 0 ] || { echo "$fails failed"; exit 1; }
echo "all distill.intermediate CLI checks passed"
