#!/usr/bin/env bash
# Configures and builds aotc in ./build (warnings are errors, as in CI).
# Usage: scripts/build.sh [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAOTC_WERROR=ON "$@"
cmake --build "$BUILD_DIR" -j "$(nproc)"
