#!/usr/bin/env bash
# Installs, from Debian's apt only, whatever aotc needs to build and test that is
# not already on the machine. Idempotent: a machine that has everything is left
# untouched and apt is not even updated.
set -euo pipefail

pkgs=(
  build-essential cmake ninja-build pkg-config
  libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
  libprotobuf-dev protobuf-compiler libonnx-dev
  libgtest-dev libgmock-dev libssl-dev libboost-dev libboost-context-dev
  llvm-14-tools clang-16 libclang-rt-16-dev
  python3-torch python3-torchvision python3-numpy python3-networkx python3-jsonschema
  python3-onnx libonnx-testdata python3-venv python3-yaml
  libgraphviz-dev graphviz chromium
  libjemalloc-dev libzip-dev
)

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: everything is already installed"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
