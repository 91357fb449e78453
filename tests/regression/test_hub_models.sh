#!/bin/sh
# Models by Hub name (docs/spec.md, "Models by Hub name") against a local stand-in for the Hub
# (tests/regression/hub_server.py: the revision, tree and resolve routes, LFS files behind a redirect
# to another origin, Range, a repo behind a token, a repo whose CDN sends corrupt bytes) serving
# tests/fixtures/tiny-bert-zh as org/tiny-bert (and as org/private, org/corrupt) and a
# sentence-transformers save of it as org/tiny-st:
#   huggingface_hub's snapshot_download fills a cache that `unif predict --model org/tiny-bert` reads
#   without asking the server, answering as the fixture directory does; unif downloads into an empty
#   cache (only the files it reads), huggingface_hub finds them there (local_files_only), and a second
#   run works offline with the server stopped; a corrupt LFS download is refused and leaves no blob;
#   an offline miss, a 404, a 401 without the token and a 403 with another are one `error:` line;
#   HF_TOKEN reaches the private repo and is not sent to the CDN; a partial .incomplete blob is
#   completed with a Range request; model.pretrained and model.revision by name.
# Usage: test_hub_models.sh UNIF SOURCE_DIR
set -u
UNIF=$1
cd "$2"
SRC=$PWD
tmp=$(mktemp -d)
server=""
trap '[ -n "$server" ] && kill $server 2>/dev/null; rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
# Nothing here may reach the real Hub, nor read the user's cache or token.
export HF_HOME="$tmp/hf-home" HF_HUB_DISABLE_TELEMETRY=1 HF_HUB_DISABLE_UPDATE_CHECK=1 HF_HUB_DISABLE_XET=1
unset HF_HUB_CACHE HUGGINGFACE_HUB_CACHE HF_TOKEN HUGGING_FACE_HUB_TOKEN HF_HUB_OFFLINE TRANSFORMERS_OFFLINE HF_ENDPOINT \
  HF_TOKEN_PATH https_proxy HTTPS_PROXY http_proxy HTTP_PROXY 2>/dev/null

venv=$SRC/.cache/venv-clients
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import openai, huggingface_hub, numpy' 2>/dev/null; then
  python3 -m venv "$venv" && "$venv/bin/pip" install -q openai==3.63.0 huggingface_hub==2.4.0 numpy > "$tmp/pip.log" 2>&1 ||
    { cat "$tmp/pip.log"; fail "pip install openai huggingface_hub into $venv"; exit 1; }
fi

# The repositories: the fixture as it is (its README and pytorch_model.bin too, which unif does not
# fetch), and a sentence-transformers save (modules.json, 1_Pooling, and an onnx/ folder unif skips).
mkdir -p "$tmp/repo-bert" "$tmp/repo-st/1_Pooling" "$tmp/repo-st/onnx"
for f in README.md config.json model.safetensors pytorch_model.bin vocab.txt; do
  cp "tests/fixtures/tiny-bert-zh/$f" "$tmp/repo-bert/"
done
cp tests/fixtures/tiny-bert-zh/vocab.txt tests/fixtures/tiny-bert-zh/model.safetensors "$tmp/repo-st/"
python3 - "$tmp/repo-st" <<'PY'
import json, sys
d = sys.argv[1]
c = json.load(open("tests/fixtures/tiny-bert-zh/config.json"))
c["architectures"] = ["BertModel"]
json.dump(c, open(d + "/config.json", "w"), indent=2)
json.dump([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
           {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
           {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}],
          open(d + "/modules.json", "w"))
json.dump({"word_embedding_dimension": 32, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True},
          open(d + "/1_Pooling/config.json", "w"))
json.dump({"max_seq_length": 64, "do_lower_case": False}, open(d + "/sentence_bert_config.json", "w"))
open(d + "/onnx/model.onnx", "wb").write(b"not for unif")
PY
mkdir "$tmp/st-local" && cp -r "$tmp/repo-st/." "$tmp/st-local/" && rm -r "$tmp/st-local/onnx"

rm -f "$tmp/ports" && : > "$tmp/log"
python3 tests/regression/hub_server.py "$tmp/ports" "$tmp/log" --repo "org/tiny-bert=$tmp/repo-bert" \
  --repo "org/private=$tmp/repo-bert" --private org/private --token hf_secret \
  --repo "org/corrupt=$tmp/repo-bert" --corrupt org/corrupt \
  --repo "org/tiny-st=$tmp/repo-st" --subdirs 1_Pooling,onnx 2> "$tmp/server.err" &
server=$!
i=0
until [ -s "$tmp/ports" ]; do
  i=$((i + 1))
  if [ $i -gt 500 ] || ! kill -0 $server 2>/dev/null; then cat "$tmp/server.err"; fail "hub_server.py did not start"; exit 1; fi
  sleep 0.02
done
URL="http://127.0.0.1:$(cut -d' ' -f1 "$tmp/ports")"
export HF_ENDPOINT="$URL"

# expect NAME PATTERN -- command...: exit 2, the last stderr line an `error: ` line matching PATTERN,
# and no other `error:` line.
expect() {
  name=$1 pattern=$2
  shift 3
  "$@" > "$tmp/out" 2> "$tmp/err"
  code=$?
  last=$(tail -n 1 "$tmp/err")
  if [ $code -ne 2 ]; then fail "$name: exit code $code (expected 2)"; cat "$tmp/err"; return; fi
  if [ "$(grep -c '^error: ' "$tmp/err")" -ne 1 ] || ! echo "$last" | grep -q '^error: '; then
    fail "$name: stderr does not end in one 'error: ' line:"; cat "$tmp/err"; return
  fi
  if ! echo "$last" | grep -Eq "$pattern"; then fail "$name: '$last' does not match /$pattern/"; return; fi
  ok "$name: $last"
}
# same NAME FILE REF: FILE's lines are REF's.
same() { cmp -s "$2" "$3" && ok "$1" || { fail "$1: the answers differ"; diff "$2" "$3" | head -n 6; }; }
# predict CACHE OUT [VAR=value ...]: unif predict --model org/tiny-bert with HF_HUB_CACHE=CACHE.
predict() {
  cache=$1 out=$2
  shift 2
  env HF_HUB_CACHE="$cache" "$@" "$UNIF" predict --model org/tiny-bert --input "$tmp/in.jsonl" > "$out" 2> "$tmp/err" ||
    { cat "$tmp/err"; fail "unif predict --model org/tiny-bert (HF_HUB_CACHE=$cache $*)"; }
}

printf '%s\n' '{"text": "今天天气很好"}' '{"text": "明天下雨，我们不去公园了"}' '{"text": "好"}' > "$tmp/in.jsonl"
"$UNIF" predict --model tests/fixtures/tiny-bert-zh --input "$tmp/in.jsonl" > "$tmp/ref.jsonl" 2> "$tmp/err" ||
  { cat "$tmp/err"; fail "unif predict on the fixture"; exit 1; }
"$UNIF" embed --model "$tmp/st-local" --input "$tmp/in.jsonl" > "$tmp/ref-st.jsonl" 2> "$tmp/err" ||
  { cat "$tmp/err"; fail "unif embed on the local sentence-transformers save"; exit 1; }

# ---- huggingface_hub fills the cache, unif reads it without asking the server ----
COMMIT=$("$venv/bin/python" - "$URL" "$tmp/c1" <<'PY'
import os, sys
from huggingface_hub import snapshot_download
print(os.path.basename(snapshot_download("org/tiny-bert", endpoint=sys.argv[1], cache_dir=sys.argv[2])))
PY
) || fail "huggingface_hub.snapshot_download"
: > "$tmp/log"
predict "$tmp/c1" "$tmp/p1.jsonl"
same "unif predict --model org/tiny-bert on huggingface_hub's cache = on the fixture directory" "$tmp/p1.jsonl" "$tmp/ref.jsonl"
[ ! -s "$tmp/log" ] && ok "a cached model: no request to the Hub" || { fail "a cached model asked the Hub:"; cat "$tmp/log"; }

# ---- unif downloads into an empty cache; huggingface_hub finds the files there ----
: > "$tmp/log"
predict "$tmp/c2" "$tmp/p2.jsonl"
same "unif predict --model org/tiny-bert downloaded by unif = on the fixture directory" "$tmp/p2.jsonl" "$tmp/ref.jsonl"
grep -q "^downloading org/tiny-bert (revision main, commit ${COMMIT%??????????????????????????????}) into $tmp/c2/models--org--tiny-bert" "$tmp/err" &&
  ok "stderr names the download: $(head -n 1 "$tmp/err")" || { fail "no download line:"; cat "$tmp/err"; }
if grep -q 'resolve/[0-9a-f]*/\(README.md\|pytorch_model.bin\)' "$tmp/log"; then
  fail "unif fetched files it does not read: $(grep -o 'resolve/[^ ]*' "$tmp/log" | tr '\n' ' ')"
else
  ok "unif fetched only what it reads: $(grep -o 'resolve/[0-9a-f]*/[^ ]*' "$tmp/log" | sed 's|.*/||' | sort -u | tr '\n' ' ')"
fi
"$venv/bin/python" - "$tmp/c2" "$COMMIT" "$SRC/tests/fixtures/tiny-bert-zh" <<'PY' && ok "huggingface_hub reads unif's cache (local_files_only): refs/main, relative links into blobs/, same bytes" || fail "huggingface_hub on unif's cache"
import os, sys, hashlib
from huggingface_hub import snapshot_download, hf_hub_download, scan_cache_dir
cache, commit, fixture = sys.argv[1:]
path = snapshot_download("org/tiny-bert", cache_dir=cache, local_files_only=True)
assert path == os.path.join(cache, "models--org--tiny-bert", "snapshots", commit), path
assert open(os.path.join(cache, "models--org--tiny-bert", "refs", "main")).read() == commit
for name in ("config.json", "vocab.txt", "model.safetensors"):
    p = hf_hub_download("org/tiny-bert", name, cache_dir=cache, local_files_only=True)
    link = os.readlink(p)
    assert link.startswith("../../blobs/"), link
    data = open(p, "rb").read()
    assert data == open(os.path.join(fixture, name), "rb").read(), name
    if name == "model.safetensors":
        assert os.path.basename(link) == hashlib.sha256(data).hexdigest(), link
assert sorted(os.listdir(path)) == ["config.json", "model.safetensors", "vocab.txt"], os.listdir(path)
info = scan_cache_dir(cache)
assert not info.warnings, info.warnings
assert set({r.repo_id: r for r in info.repos}["org/tiny-bert"].refs) == {"main"}
PY

# ---- a corrupt LFS download is refused and leaves no blob ----
expect corrupt "error: --model: the download of model.safetensors from org/corrupt is corrupt \(sha256 [0-9a-f]{64}, expected [0-9a-f]{64}\); nothing was kept" -- \
  env HF_HUB_CACHE="$tmp/c3" "$UNIF" predict --model org/corrupt --input "$tmp/in.jsonl"
sha=$(sha256sum tests/fixtures/tiny-bert-zh/model.safetensors | cut -d' ' -f1)
if ls "$tmp/c3/models--org--corrupt/blobs/" | grep -q "^$sha"; then
  fail "corrupt: a blob or partial file was kept: $(ls "$tmp/c3/models--org--corrupt/blobs/")"
elif ls "$tmp/c3/models--org--corrupt/snapshots/"*/model.safetensors > /dev/null 2>&1; then
  fail "corrupt: the snapshot links model.safetensors"
else
  ok "corrupt: no blob, no partial file, no link"
fi

# ---- offline miss; 404; a private repo ----
expect offline_miss "^error: --model: 'org/tiny-bert' is not in the Hugging Face cache \(HF_HUB_CACHE=$tmp/c4\) and HF_HUB_OFFLINE is set: run \`huggingface-cli download org/tiny-bert\` or unset HF_HUB_OFFLINE$" -- \
  env HF_HUB_CACHE="$tmp/c4" HF_HUB_OFFLINE=1 "$UNIF" predict --model org/tiny-bert --input "$tmp/in.jsonl"
expect no_such_model "error: --model: no model 'org/nope' on http://127\.0\.0\.1:[0-9]+ \(404 Not Found\); nor is 'org/nope' a directory in $SRC$" -- \
  env HF_HUB_CACHE="$tmp/c4" "$UNIF" predict --model org/nope --input "$tmp/in.jsonl"
expect no_token "error: --model: the Hub refused 'org/private' \(401 Unauthorized: Invalid username or password\.\): it is private or gated, or does not exist; set HF_TOKEN" -- \
  env HF_HUB_CACHE="$tmp/c5" "$UNIF" predict --model org/private --input "$tmp/in.jsonl"
expect wrong_token "error: --model: access to 'org/private' is restricted \(403 Forbidden: .*\): a gated model needs its conditions accepted" -- \
  env HF_HUB_CACHE="$tmp/c5" HF_TOKEN=hf_other "$UNIF" predict --model org/private --input "$tmp/in.jsonl"
: > "$tmp/log"
HF_HUB_CACHE="$tmp/c5" HF_TOKEN=hf_secret "$UNIF" predict --model org/private --input "$tmp/in.jsonl" \
  > "$tmp/p5.jsonl" 2> "$tmp/err" || { cat "$tmp/err"; fail "with HF_TOKEN"; }
same "org/private with HF_TOKEN" "$tmp/p5.jsonl" "$tmp/ref.jsonl"
if grep -q '^cdn .*auth=Bearer' "$tmp/log"; then fail "the token went to the CDN: $(grep '^cdn' "$tmp/log")"
elif ! grep -q '^cdn GET' "$tmp/log"; then fail "no CDN download: $(cat "$tmp/log")"
else ok "the token goes to the Hub, not to the CDN the LFS file redirects to"; fi

# ---- the config keys by name; a sentence-transformers repository ----
expect config_revision "error: .*demo.yaml: model.pretrained: 'org/tiny-bert' has no revision 'v9' on http://127\.0\.0\.1:[0-9]+ \(404 Not Found\)$" -- \
  env HF_HUB_CACHE="$tmp/c4" "$UNIF" train configs/demo.yaml --set model.pretrained=org/tiny-bert \
  --set model.revision=v9 --set output_dir="$tmp/o4"
[ -e "$tmp/o4" ] && fail "a refused config wrote $tmp/o4"
HF_HUB_CACHE="$tmp/c4" "$UNIF" train configs/demo.yaml --set model.pretrained=org/tiny-bert \
  --set model.revision="$COMMIT" --set training.max_steps=1 --set data.test=null \
  --set output_dir="$tmp/o5" > /dev/null 2> "$tmp/err" || { cat "$tmp/err"; fail "unif train with model.pretrained: org/tiny-bert"; }
grep -q "^  pretrained: $tmp/c4/models--org--tiny-bert/snapshots/$COMMIT\$" "$tmp/o5/config.yaml" &&
  [ ! -e "$tmp/c4/models--org--tiny-bert/refs/$COMMIT" ] &&
  ok "unif train by name at a commit: config.yaml records $(grep '^  pretrained:' "$tmp/o5/config.yaml")" ||
  { fail "unif train by name: config.yaml says:"; grep -A1 '^  pretrained:' "$tmp/o5/config.yaml"; }
: > "$tmp/log"
HF_HUB_CACHE="$tmp/c4" "$UNIF" embed --model org/tiny-st --input "$tmp/in.jsonl" > "$tmp/e4.jsonl" 2> "$tmp/err" ||
  { cat "$tmp/err"; fail "unif embed --model org/tiny-st"; }
same "unif embed --model org/tiny-st = on the local sentence-transformers save" "$tmp/e4.jsonl" "$tmp/ref-st.jsonl"
grep -q '1_Pooling/config.json' "$tmp/log" && ! grep -q 'onnx' "$tmp/log" &&
  ok "a sentence-transformers repo: 1_Pooling/config.json fetched, onnx/ not" || { fail "sentence-transformers files:"; cat "$tmp/log"; }

# ---- a partial .incomplete blob is completed with a Range request ----
size=$(wc -c < tests/fixtures/tiny-bert-zh/model.safetensors)
half=$((size / 2))
mkdir -p "$tmp/c6/models--org--tiny-bert/blobs"
head -c $half tests/fixtures/tiny-bert-zh/model.safetensors > "$tmp/c6/models--org--tiny-bert/blobs/$sha.incomplete"
: > "$tmp/log"
predict "$tmp/c6" "$tmp/p6.jsonl"
same "a resumed download: the answers" "$tmp/p6.jsonl" "$tmp/ref.jsonl"
grep -q "^cdn GET /cdn/org/tiny-bert/$sha range=bytes=$half- " "$tmp/log" &&
  [ "$(grep -c "^cdn GET /cdn/org/tiny-bert/$sha" "$tmp/log")" = 1 ] &&
  cmp -s "$tmp/c6/models--org--tiny-bert/blobs/$sha" tests/fixtures/tiny-bert-zh/model.safetensors &&
  [ ! -e "$tmp/c6/models--org--tiny-bert/blobs/$sha.incomplete" ] &&
  ok "the partial blob was completed by one GET with Range: bytes=$half-" || { fail "resume:"; cat "$tmp/log"; }

# ---- the server stopped: unif's cache serves a second run offline; nothing cached is an error ----
kill $server
wait $server 2>/dev/null
server=""
predict "$tmp/c2" "$tmp/p3.jsonl" HF_HUB_OFFLINE=1
same "a second run, HF_HUB_OFFLINE=1 and the server stopped" "$tmp/p3.jsonl" "$tmp/ref.jsonl"
expect unreachable "error: --model: cannot reach http://127\.0\.0\.1:[0-9]+/api/models/org/tiny-bert/revision/main \(no connection\): check the network" -- \
  env HF_HUB_CACHE="$tmp/c7" "$UNIF" predict --model org/tiny-bert --input "$tmp/in.jsonl"

[ $fails = 0 ] && echo "PASS" || { echo "$fails failed"; exit 1; }
