#!/bin/sh
# The project's C++ layout (.clang-format, Debian 12's clang-format 14):
#   scripts/format.sh           # rewrites every C++ source in place
#   scripts/format.sh --check   # lists the files whose layout differs and exits 1 (the `format` test)
set -eu
cd "$(dirname "$0")/.."
fmt=$(command -v clang-format-14 || command -v clang-format || true)
[ -n "$fmt" ] || { echo "error: clang-format is missing: apt-get install clang-format" >&2; exit 2; }
files=$(find adversarial apps bench cmake framework include models tests \
          \( -name '*.h' -o -name '*.hpp' -o -name '*.cpp' -o -name '*.cc' -o -name '*.cu' -o -name '*.cuh' \) \
          -not -path 'tests/fixtures/*' | LC_ALL=C sort)
if [ "${1:-}" = --check ]; then
  bad=0
  for f in $files; do
    if ! "$fmt" --dry-run --Werror "$f" >/dev/null 2>&1; then
      echo "$f: not laid out as .clang-format says (scripts/format.sh rewrites it)"
      bad=1
    fi
  done
  exit $bad
fi
# shellcheck disable=SC2086
"$fmt" -i $files
