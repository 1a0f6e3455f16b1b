#!/usr/bin/env bash
# Quick start (b): install what is missing (Debian packages, and the pinned
# PyTorch 2.x environment from PyPI: scripts/setup-venv.sh), build, run the whole test suite
# (GoogleTest unit and end-to-end tests, lit golden/CLI/error tests, Python
# exporter and schema tests, kill test) through CTest; then the sanitized
# half (scripts/test-sanitized.sh: a clang-16 ASan+UBSan build running the
# parser, engine and runtime tests, a short pass of every fuzz target, and
# the GCC-vs-clang artifact comparison).  AOTC_SKIP_SANITIZED=1 skips it.
set -euo pipefail
cd "$(dirname "$0")/.."
# How long each phase took, printed last (also when one fails): CI's budget is
# 60 minutes on 2 cores, and its log shows only the tail.
phases=""
phase() { phases+="$(printf '%-34s %5ds' "$1" $((SECONDS - t0)))"$'\n'; t0=$SECONDS; }
trap 'printf "\n== phases (seconds)\n%s%-34s %5ds\n" "$phases" total $SECONDS' EXIT
t0=$SECONDS
bash scripts/install-deps.sh
phase "install Debian packages"
# The pinned PyTorch 2.x environment (PyPI, cached outside the clone): the tests
# labelled torch2 run the exporter, op and zoo checks under it.
py2=$(bash scripts/setup-venv.sh | tail -1)
phase "PyTorch 2.x venv (PyPI)"
bash scripts/build.sh -DAOTC_TORCH2_PYTHON="$py2" > build.log 2>&1 || { tail -80 build.log; exit 1; }
phase "build (GCC)"
(cd build && ctest --output-on-failure -j "$(nproc)" --timeout 1200)
phase "tests (GCC build)"
if [ "${AOTC_SKIP_SANITIZED:-0}" != 1 ]; then
  bash scripts/test-sanitized.sh
  phase "build + tests (clang ASan+UBSan)"
fi
