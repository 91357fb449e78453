#!/bin/sh
# Disk faults: a disk that fills up mid-save, a permission revoked between two
# runs, a read-only output directory. Each ends with exit 2 and an `error:` line naming the file or
# key; the last complete checkpoint stays loadable (`unif eval` on it); with the fault gone, the
# resumed run ends with the uninterrupted run's final model, byte for byte.
# Needs root for mount (a small tmpfs) and setpriv (root without CAP_DAC_OVERRIDE, so that file
# modes bind it): prints "SKIP: ..." and exits 0 where either is not permitted.
# Usage: test_disk_faults.sh UNIF_BINARY SOURCE_DIR
set -u
UNIF=$1
cd "$2"
tmp=$(mktemp -d)
mnt=$tmp/mnt
mkdir -p "$mnt"
cleanup() {
  umount "$mnt" 2>/dev/null
  chmod -R u+w "$tmp" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL $*"
  exit 1
}
if ! mount -t tmpfs -o size=64m tmpfs "$mnt" 2>/dev/null; then
  echo "SKIP: cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN)"
  exit 0
fi
umount "$mnt"
if ! setpriv --bounding-set=-dac_override,-dac_read_search -- true 2>/dev/null; then
  echo "SKIP: setpriv cannot drop CAP_DAC_OVERRIDE here"
  exit 0
fi

head -n 16 data/sib200_zh/dev.jsonl > "$tmp/dev.jsonl"
# 4 steps, a checkpoint (8.2 MB: model + AdamW state) after each, one kept, no dev set (no best/).
train() {
  out=$1
  shift
  "$UNIF" train configs/demo.yaml --set data.dev=null --set training.max_steps=4 --set training.save_every=1 \
    --set training.keep_checkpoints=1 --set training.log_every=1 --set "output_dir=$out" "$@"
}
# loadable DIR: a complete checkpoint that `unif eval` reads.
loadable() {
  [ -f "$1/COMPLETE" ] || fail "$1 is not complete"
  "$UNIF" eval configs/demo.yaml --model "$1" --set "data.dev=$tmp/dev.jsonl" > "$tmp/eval.json" 2>&1 ||
    { cat "$tmp/eval.json"; fail "$1 does not load"; }
  grep -q '"accuracy"' "$tmp/eval.json" || fail "eval of $1 printed no accuracy"
}
# one_error LOG PATTERN: exit status was 2 and the log has one `error:` line matching PATTERN.
one_error() {
  [ "$rc" -eq 2 ] || { cat "$1"; fail "exit status $rc, expected 2"; }
  [ "$(grep -c '^error: ' "$1")" -eq 1 ] || { cat "$1"; fail "not exactly one error: line"; }
  grep '^error: ' "$1" | grep -Eq "$2" || { cat "$1"; fail "the error line does not match /$2/"; }
  echo "ok: $(grep '^error: ' "$1")"
}

train "$tmp/straight" > "$tmp/straight.log" 2>&1 || { cat "$tmp/straight.log"; fail "the uninterrupted run"; }
want=$tmp/straight/final/model.safetensors

# --- 1. The disk fills up mid-save: 13 MB hold one checkpoint, not two (the older one is removed
# only once the newer is complete). ---
mount -t tmpfs -o size=13m tmpfs "$mnt" || fail "mount"
train "$mnt/full" > "$tmp/full1.log" 2>&1
rc=$?
one_error "$tmp/full1.log" 'step-2.*No space left on device'
[ ! -e "$mnt/full/final" ] || fail "full disk: a final/ was written"
ls "$mnt/full/checkpoints" | grep -q tmp && fail "full disk: the failed save left its temporary directory"
loadable "$mnt/full/checkpoints/step-1"
mount -o remount,size=64m "$mnt" || fail "remount"
train "$mnt/full" > "$tmp/full2.log" 2>&1 || { cat "$tmp/full2.log"; fail "full disk: the resumed run"; }
grep -q "resumed from .*step-1" "$tmp/full2.log" || fail "full disk: the second run did not resume from step-1"
cmp "$mnt/full/final/model.safetensors" "$want" || fail "full disk: the resumed run's model differs"
echo "ok: full disk: step-1 kept and loadable, resumed to the uninterrupted model"

# --- 2. A permission revoked between runs: checkpoints/ no longer writable, for a process without
# CAP_DAC_OVERRIDE (root has it and ignores file modes). ---
noroot() { setpriv --bounding-set=-dac_override,-dac_read_search -- "$@"; }
train "$tmp/perm" --set training.max_steps=2 > "$tmp/perm1.log" 2>&1 || { cat "$tmp/perm1.log"; fail "perm: run 1"; }
cp "$tmp/perm/checkpoints/step-2/model.safetensors" "$tmp/perm-step2.safetensors"
chmod a-w "$tmp/perm/checkpoints"
noroot "$UNIF" train configs/demo.yaml --set data.dev=null --set training.max_steps=4 --set training.save_every=1 \
  --set training.keep_checkpoints=1 --set training.log_every=1 --set "output_dir=$tmp/perm" > "$tmp/perm2.log" 2>&1
rc=$?
one_error "$tmp/perm2.log" 'checkpoints.*(Permission denied|not writable)'
chmod u+w "$tmp/perm/checkpoints"
cmp "$tmp/perm/checkpoints/step-2/model.safetensors" "$tmp/perm-step2.safetensors" || fail "perm: step-2 changed"
loadable "$tmp/perm/checkpoints/step-2"
grep -q "step 3/4" "$tmp/perm2.log" || fail "perm: the second run did not train before its save failed"
train "$tmp/perm" > "$tmp/perm3.log" 2>&1 || { cat "$tmp/perm3.log"; fail "perm: the resumed run"; }
grep -q "resumed from .*step-2" "$tmp/perm3.log" || fail "perm: the third run did not resume from step-2"
cmp "$tmp/perm/final/model.safetensors" "$want" || fail "perm: the resumed run's model differs"
echo "ok: revoked permission: step-2 kept, resumed to the uninterrupted model"

# --- 3. A read-only output directory (the filesystem remounted read-only between runs). ---
train "$mnt/ro" --set training.max_steps=2 > "$tmp/ro1.log" 2>&1 || { cat "$tmp/ro1.log"; fail "ro: run 1"; }
(cd "$mnt/ro" && find . -type f | sort | xargs md5sum) > "$tmp/ro-before.md5"
mount -o remount,ro "$mnt" || fail "remount ro"
train "$mnt/ro" > "$tmp/ro2.log" 2>&1
rc=$?
one_error "$tmp/ro2.log" 'output_dir.*ro.*(not writable|Read-only)'
(cd "$mnt/ro" && find . -type f | sort | xargs md5sum) > "$tmp/ro-after.md5"
cmp "$tmp/ro-before.md5" "$tmp/ro-after.md5" || fail "ro: the output directory changed"
loadable "$mnt/ro/checkpoints/step-2"
mount -o remount,rw "$mnt" || fail "remount rw"
train "$mnt/ro" > "$tmp/ro3.log" 2>&1 || { cat "$tmp/ro3.log"; fail "ro: the resumed run"; }
cmp "$mnt/ro/final/model.safetensors" "$want" || fail "ro: the resumed run's model differs"
echo "ok: read-only output directory: nothing changed, resumed to the uninterrupted model"
