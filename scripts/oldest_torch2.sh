#!/usr/bin/env bash
# The exporter on the oldest PyTorch 2.x it supports (issue 36: "the exporter
# must not depend on one release's private API without a fallback"): makes or
# reuses a virtual environment from scripts/requirements/torch2-oldest.txt
# (torch 2.4) and runs, under it, the exporter's tests, the op conformance
# programs as 2.x traces them (reference and emulate, both partitioners) and a
# zoo subset against eager.  Not part of CI (a second 3 GB environment); its
# results go in the session note.
#   scripts/oldest_torch2.sh [BUILD_DIR]   (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
aotc=$build/tools/aotc
py=$(AOTC_REQUIREMENTS=scripts/requirements/torch2-oldest.txt \
     AOTC_VENV=${AOTC_OLDEST_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/aotc/venv-torch2-oldest} scripts/setup-venv.sh | tail -1)
"$py" -c "import torch; print('oldest_torch2: torch', torch.__version__)"
status=0
"$py" tools/fx_export_test.py "$aotc" || status=1
"$py" scripts/torch2_ops_test.py "$aotc" -j 2 || status=1
"$py" scripts/zoo_check.py --build "$build" vit_32 swin_v2_small lstm_2layer transformer_encoder resnet18 || status=1
exit $status
