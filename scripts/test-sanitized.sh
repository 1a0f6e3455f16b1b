#!/usr/bin/env bash
# The sanitized half of CI (issue 11): builds aotc with Debian's clang-16
# under AddressSanitizer (leaks detected) and UndefinedBehaviorSanitizer
# (halting on the first report) plus the libFuzzer targets, in build-asan,
# warnings as errors; then runs there the tests that exercise the parsers,
# the engine and the runtimes (everything but the slow real-model test,
# models_test), a short pass of every fuzz target, and the check that the
# GCC build (./build, built first by scripts/test.sh) and this clang build
# write byte-identical artifacts.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${ASAN_BUILD_DIR:-build-asan}
CC=clang-16 CXX=clang++-16 BUILD_DIR=$B bash scripts/build.sh -DAOTC_SANITIZE=ON -DAOTC_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -gline-tables-only" \
  -DAOTC_REFERENCE_AOTC="$PWD/build/tools/aotc" > "$B.log" 2>&1 || { tail -80 "$B.log"; exit 1; }
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
cd "$B"
ctest --output-on-failure -j "$(nproc)" --timeout 2400 -E '^(models_test|models_export|onnx_gradcheck)$'
