#!/bin/sh
# Starts bench_parallel as N ranks of a c10d group on this machine (what
# `torchrun --no-python --nproc_per_node=N build/bin/bench_parallel ...` would do), one intra-op
# thread each unless --threads says otherwise. Rank 0 prints the row. See docs/performance.md.
#
#   bench/bench_distributed.sh BUILD_DIR [N] [bench_parallel options...]
set -eu
build=${1:?usage: bench/bench_distributed.sh BUILD_DIR [N] [options]}
shift
n=2
if [ $# -gt 0 ]; then n=$1; shift; fi
[ $# -gt 0 ] || set -- --threads 1
port=${MASTER_PORT:-29533}
pids=""
r=1
while [ "$r" -lt "$n" ]; do
  WORLD_SIZE=$n RANK=$r LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port OMP_NUM_THREADS=1 \
    "$build/bin/bench_parallel" "$@" &
  pids="$pids $!"
  r=$((r + 1))
done
WORLD_SIZE=$n RANK=0 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port OMP_NUM_THREADS=1 \
  "$build/bin/bench_parallel" "$@"
for p in $pids; do wait "$p"; done
