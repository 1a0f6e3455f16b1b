#!/usr/bin/env bash
# Quick start (a): install what is missing, build, compile the bundled example
# (testdata/fx/mlp.json, exported from PyTorch with tools/fx_export.py) into
# an artifact directory, print its summary, then run it on the CPU reference
# runtime and compare with PyTorch eager's results.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh > build.log 2>&1 || { tail -50 build.log; exit 1; }
OUT=${OUT:-build/example/mlp}
./build/tools/aotc compile testdata/fx/mlp.json -o "$OUT"
./build/tools/aotc run "$OUT" --inputs testdata/fx/mlp.safetensors --inputs testdata/fx/mlp.inputs.safetensors \
  --grad-outputs testdata/fx/mlp.inputs.safetensors --out "$OUT.results.safetensors"
/usr/bin/python3 scripts/compare_safetensors.py "$OUT.results.safetensors" testdata/fx/mlp.expected.safetensors
echo "artifact: $OUT (manifest.json, forward.ir, backward.ir, kernels/)"
