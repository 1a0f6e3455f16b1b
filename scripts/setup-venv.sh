#!/usr/bin/env bash
# Makes (or reuses) the PyTorch 2.x reference environment: a Python virtual
# environment with the exact versions of scripts/requirements/torch2.txt, from
# PyPI, in a cache directory outside the clone (PyPI's Linux torch brings about
# 3 GB of CUDA wheels, so it is made once per machine and reused).
#   AOTC_VENV          where it lives (default ${XDG_CACHE_HOME:-~/.cache}/aotc/venv-torch2)
#   AOTC_REQUIREMENTS  the requirements file (default scripts/requirements/torch2.txt;
#                      scripts/oldest_torch2.sh uses torch2-oldest.txt)
# Prints the environment's python on its last line. Reused when its stamp (the
# requirements file's SHA-256) matches; otherwise built beside it and renamed into
# place, so an interrupted install never leaves a half environment behind.
set -euo pipefail
cd "$(dirname "$0")/.."
req=${AOTC_REQUIREMENTS:-scripts/requirements/torch2.txt}
venv=${AOTC_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/aotc/venv-torch2}
want=$(sha256sum "$req" | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.aotc-stamp" 2>/dev/null)" = "$want" ]; then
  echo "setup-venv: reusing $venv" >&2
  echo "$venv/bin/python"
  exit 0
fi
mkdir -p "$(dirname "$venv")"
tmp="$venv.tmp.$$"
rm -rf "$tmp"
trap 'rm -rf "$tmp"' EXIT
echo "setup-venv: installing $(grep -vc '^#' "$req") pinned packages into $venv (once per machine)" >&2
# Debian's python3 (python3-venv, installed by scripts/install-deps.sh); the
# environment must not depend on whichever python3 is first on PATH.
/usr/bin/python3 -m venv "$tmp"
"$tmp/bin/pip" install -q --disable-pip-version-check --no-input -r "$req" >&2
# The venv's scripts carry its path: build in place of the old one, then move.
rm -rf "$venv.old"
[ -e "$venv" ] && mv "$venv" "$venv.old"
mv "$tmp" "$venv"
trap - EXIT
rm -rf "$venv.old"
# pip wrote absolute paths of the temporary directory into the entry scripts;
# the tests only use bin/python (python -m ...), which is a symlink and moves fine.
echo "$want" > "$venv/.aotc-stamp"
"$venv/bin/python" -c "import torch, torchvision; print('setup-venv: torch', torch.__version__, 'torchvision', torchvision.__version__)" >&2
echo "$venv/bin/python"
