#!/usr/bin/env bash
# Quick start (b): install what is missing, build, run the whole test suite
# (GoogleTest unit and end-to-end tests, lit golden/CLI/error tests, Python
# exporter and schema tests) through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh > build.log 2>&1 || { tail -80 build.log; exit 1; }
cd build
ctest --output-on-failure -j "$(nproc)" --timeout 1200
