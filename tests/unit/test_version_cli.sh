#!/bin/sh
# CLI test of `unif --version` (SPEC §7): the LibTorch version this build was configured with, the
# CUDA / cuDNN / NCCL versions compiled in (numbers with CUDA, "none" without), and the GPUs seen.
# Usage: test_version_cli.sh UNIF_BINARY TORCH_VERSION WITH_CUDA(ON|OFF) WITH_NCCL(ON|OFF)
set -u
out=$("$1" --version)
rc=$?
echo "$out"
fail=0
expect() {  # description extended-regex
  if echo "$out" | grep -Eqx "$2"; then echo "ok: $1"; else echo "FAIL: $1 (no line matching '$2')"; fail=1; fi
}
[ "$rc" -eq 0 ] || { echo "FAIL: exit code $rc"; fail=1; }
[ "$(echo "$out" | wc -l)" -eq 4 ] || { echo "FAIL: expected 4 lines"; fail=1; }
expect "unif's own version" 'unif [0-9]+\.[0-9]+\.[0-9]+'
expect "LibTorch $2" "LibTorch $(echo "$2" | sed 's/\./\\./g')"
v='[0-9]+\.[0-9]+'
case "$3$4" in
  ONON) expect "CUDA, cuDNN and NCCL compiled in" "CUDA $v \\(runtime $v\\), cuDNN $v\\.[0-9]+, NCCL $v\\.[0-9]+" ;;
  ONOFF) expect "CUDA and cuDNN compiled in, no NCCL" "CUDA $v \\(runtime $v\\), cuDNN ($v\\.[0-9]+|none), NCCL none" ;;
  *) expect "no CUDA" "CUDA none, cuDNN none, NCCL none" ;;
esac
expect "GPU count" 'GPUs: [0-9]+'
if [ ! -e /dev/nvidiactl ]; then expect "no GPU here" 'GPUs: 0'; fi
exit $fail
