#!/usr/bin/env bash
# Quick start (a): install what is missing, build, compile the bundled example
# (testdata/fx/mlp.json, exported from PyTorch with tools/fx_export.py) into
# an artifact directory, print its summary, then run it on the CPU (reference
# runtime, and the generated kernels emulated) and compare with PyTorch eager.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh > build.log 2>&1 || { tail -50 build.log; exit 1; }
OUT=${OUT:-build/example/mlp}
./build/tools/aotc compile testdata/fx/mlp.json -o "$OUT"
./build/tools/aotc run "$OUT" --inputs testdata/fx/mlp.safetensors --inputs testdata/fx/mlp.inputs.safetensors \
  --grad-outputs testdata/fx/mlp.inputs.safetensors --out "$OUT.results.safetensors"
/usr/bin/python3 scripts/compare_safetensors.py "$OUT.results.safetensors" testdata/fx/mlp.expected.safetensors
# The same artifact through its generated CUDA kernels, emulated on the CPU.
./build/tools/aotc run "$OUT" --backend emulate --inputs testdata/fx/mlp.safetensors --inputs testdata/fx/mlp.inputs.safetensors \
  --grad-outputs testdata/fx/mlp.inputs.safetensors --out "$OUT.emulated.safetensors"
/usr/bin/python3 scripts/compare_safetensors.py "$OUT.emulated.safetensors" testdata/fx/mlp.expected.safetensors | tail -1
echo "artifact: $OUT (manifest.json, forward.ir, backward.ir, kernels/)"
