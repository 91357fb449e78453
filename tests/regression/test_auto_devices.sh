#!/bin/sh
# parallel.devices: auto (the default, SPEC §7): the first line of the log says what was chosen and
# why; an explicit list is used as given and logs no such line. The throughput fields of the train
# lines leave evaluation and checkpoint time out (train_s <= the whole run).
# Usage: test_auto_devices.sh UNIF_BINARY SOURCE_DIR
set -eu
UNIF=$1
cd "$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() {
  out=$1
  shift
  "$UNIF" train configs/demo.yaml --set training.max_steps=2 --set training.log_every=1 --set "output_dir=$out" "$@" \
    > "$out.log" 2>&1 || { echo "FAIL: unif train $*"; cat "$out.log"; exit 1; }
}
run "$tmp/auto" --set parallel.devices=auto
first=$(head -n 1 "$tmp/auto/train.log")
if "$UNIF" --version | grep -q '^GPUs: [1-9]'; then
  case "$first" in  # a machine with GPUs: auto takes them
    *"parallel.devices auto -> [cuda:0"*"GPU"*"visible"*) ;;
    *) echo "FAIL: the first log line does not say that auto chose the GPUs: $first"; exit 1 ;;
  esac
else
  case "$first" in
    *"parallel.devices auto -> [cpu"*"physical core"*"hidden 32 <= 768"*) ;;  # demo.yaml: tiny BERT, hidden 32
    *) echo "FAIL: the first log line does not say what auto chose: $first"; exit 1 ;;
  esac
fi
echo "$first"
run "$tmp/given" --set 'parallel.devices=[cpu]'
if grep -q "parallel.devices auto" "$tmp/given/train.log"; then
  echo "FAIL: an explicit device list was logged as auto"; cat "$tmp/given/train.log"; exit 1
fi
# train_s (training seconds) on every train line.
n=$(grep '"split":"train"' "$tmp/auto/metrics.jsonl" | grep -c '"train_s":[0-9]')
if [ "$n" -ne 2 ]; then
  echo "FAIL: expected train_s on both train lines"; cat "$tmp/auto/metrics.jsonl"; exit 1
fi
echo ok
