#!/bin/sh
# `cmake --install` then find_package(unif) from a separate project: it configures, builds, links
# unif::framework, and runs (tokenizes and loads the fixture checkpoint).
# Usage: test_find_package.sh BUILD_DIR SOURCE_DIR [CMAKE_ARG...] (extra arguments configure the
# consumer: the CUDA compiler and architectures of a CUDA build)
set -eu
build=$1
src=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"
cmake -S "$src/tests/install/consumer" -B "$tmp/b" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" "$@" > "$tmp/configure.log" || { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/b" > "$tmp/build.log" || { cat "$tmp/build.log"; exit 1; }
out=$("$tmp/b/consumer" "$src/tests/fixtures/tiny-bert-zh")
echo "$out"
echo "$out" | grep -q "今 天 天 气 很 好" && echo "$out" | grep -q "params: 41"
