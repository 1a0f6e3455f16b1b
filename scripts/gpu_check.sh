#!/usr/bin/env bash
# Issue 45 item 1: the one-command GPU check.
#
#   scripts/gpu_check.sh [--build DIR | --aotc AOTC --runtime LIBAOTC_RUNTIME] [--bundle DIR]
#       prepares the bundle (default: gpu-bundle/ in this checkout, which
#       .gitignore lists) and prints the device call that runs it;
#   scripts/gpu_check.sh --host-test [--build DIR] --bundle DIR [-- OPTIONS]
#       prepares the bundle in DIR and runs its entry point here on the
#       emulate device at tiny sizes (ctest gpu_check_smoke).
#
# The GPU machine has CUDA 13 and PyTorch with its nvidia/* libraries, but
# none of the Debian libraries aotc links, and cannot build aotc.  The bundle
# holds what it lacks:
#   bin/aotc            a wrapper putting lib/ first on LD_LIBRARY_PATH for
#                       bin/aotc.bin (build/tools/aotc, stripped);
#   lib/                libaotc_runtime.so.0 (stripped) and every shared
#                       library `ldd` resolves for either that is not glibc,
#                       libstdc++/libgcc or CUDA's (ONNX, protobuf, spdlog,
#                       fmt, Graphviz, jemalloc, ...); lib/runtime-needs lists
#                       those the runtime library needs, which gpu_check.py
#                       loads into Python first (the machine's own copy where
#                       it has one);
#   src/                the scripts and fixtures the check runs (so the
#                       bundle does not depend on the checkout beside it);
#   env.sh              CUDA's libraries from PyTorch's nvidia/* wheels and
#                       /usr/local/cuda on LD_LIBRARY_PATH (run.sh and
#                       probe.sh source it), and the emulate device's host
#                       compiler: bin/c++ (the machine's, without the
#                       bundle's libraries) with include/ (Boost.Context's
#                       headers) and lib/libboost_context.so;
#   run.sh              the entry point: scripts/gpu_check.py run, writing
#                       gpu_check.json, gpu_check.md and gpu_check.log under
#                       $OUT;
#   probe.sh            scripts/gpu_probe.py: where a GPU result parts from
#                       the emulate device's (Note [Step trace]), for a
#                       training gate that fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
bundle=$root/gpu-bundle
host_test=0
aotc=
rtlib=
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --aotc) aotc=$2; shift 2 ;;
    --runtime) rtlib=$2; shift 2 ;;
    --bundle) bundle=$2; shift 2 ;;
    --host-test) host_test=1; shift ;;
    --) shift; extra=("$@"); break ;;
    *) echo "gpu_check.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
aotc=${aotc:-$build/tools/aotc}
rtlib=${rtlib:-$build/src/libaotc_runtime.so.0}
[ -f "$aotc" ] && [ -x "$aotc" ] || { echo "gpu_check.sh: no $aotc: build aotc first (scripts/build.sh)" >&2; exit 1; }
[ -f "$rtlib" ] || { echo "gpu_check.sh: no $rtlib: build aotc first" >&2; exit 1; }

rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/src/scripts" "$bundle/src/tools" "$bundle/src/testdata"
strip -o "$bundle/bin/aotc.bin" "$aotc"
strip -o "$bundle/lib/libaotc_runtime.so.0" "$rtlib"
# glibc, the C++ runtime and CUDA's libraries are the machine's own.
system='^(linux-vdso|ld-linux|libc\.so|libm\.so|libmvec\.so|libdl\.so|libpthread\.so|librt\.so|libresolv\.so|libutil\.so|libstdc\+\+\.so|libgcc_s\.so|libcuda\.so|libcudart|libcublas|libcudnn|libnvrtc|libnvJitLink|libnvidia)'
deps() {  # the resolved libraries ldd names for $1, one path a line, system ones left out
  ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
    [[ $name =~ $system ]] || echo "$path"
  done
}
for f in $(deps "$aotc"; deps "$rtlib"); do
  cp -L --no-clobber "$f" "$bundle/lib/$(basename "$f")"
done
for f in "$bundle"/lib/*.so*; do
  [ "$(basename "$f")" = libaotc_runtime.so.0 ] || strip --strip-unneeded "$f" 2>/dev/null || true
done
deps "$rtlib" | xargs -r -n1 basename > "$bundle/lib/runtime-needs"
# The emulate device there (scripts/gpu_probe.py compares cuda with it): it
# host-compiles the kernels with the machine's c++ against Boost.Context,
# which that machine lacks: the headers `c++ -M` lists for it and the library,
# found through CPLUS_INCLUDE_PATH and LIBRARY_PATH (env.sh).
echo '#include <boost/context/fiber.hpp>' | c++ -std=c++17 -M -x c++ - | tr ' \\' '\n\n' | grep '^/usr/include/boost/' | sort -u |
  while read -r h; do
    mkdir -p "$bundle/include/$(dirname "${h#/usr/include/}")"
    cp "$h" "$bundle/include/${h#/usr/include/}"
  done
ctx=$(readlink -f "$(c++ -print-file-name=libboost_context.so)")
cp "$ctx" "$bundle/lib/$(basename "$ctx")"
cp "$ctx" "$bundle/lib/libboost_context.so"
cat > "$bundle/bin/aotc" <<'EOF'
#!/bin/sh
# The bundle's aotc: its own libraries first.
b=$(cd "$(dirname "$0")/.." && pwd)
LD_LIBRARY_PATH="$b/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$b/bin/aotc.bin" "$@"
EOF
chmod +x "$bundle/bin/aotc"
for s in gpu_check.py bench_gpu.py gpu_test.py compare_safetensors.py traffic_ideal.py gpu_probe.py compare_traces.py; do
  cp "$root/scripts/$s" "$bundle/src/scripts/"
done
cp "$root/tools/fx_export.py" "$bundle/src/tools/"
for d in fx ops; do
  mkdir -p "$bundle/src/testdata/$d"
  cp -r "$root/testdata/$d/." "$bundle/src/testdata/$d/"
done
cat > "$bundle/env.sh" <<'EOF'
# Sourced by run.sh and probe.sh: CUDA's libraries from PyTorch's nvidia/*
# wheels first (cuBLAS, cuDNN, NVRTC, nvJitLink), then the toolkit's.
b=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
py=${PYTHON:-python3}
out=${OUT:-$b/out}
mkdir -p "$out"
nv=$("$py" -c '
import glob, os, site
dirs = []
for sp in site.getsitepackages():
    dirs += sorted(d for d in glob.glob(os.path.join(sp, "nvidia", "**", "lib"), recursive=True) if os.path.isdir(d))
print(":".join(dirs))' 2>/dev/null || true)
export LD_LIBRARY_PATH="${nv:+$nv:}/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}:/usr/local/nvidia/lib64"
export AOTC_BUNDLE_LIB="$b/lib" PYTHONUNBUFFERED=1
export PATH="$PATH:/usr/local/cuda/bin"
# The emulate device's host compiler (gpu_probe.py): the machine's c++, run
# without the bundle's libraries on LD_LIBRARY_PATH (bin/c++), with Boost.Context
# from the bundle.
export AOTC_REAL_CXX=${AOTC_REAL_CXX:-$(command -v c++ || command -v g++ || true)}
export CPLUS_INCLUDE_PATH="$b/include${CPLUS_INCLUDE_PATH:+:$CPLUS_INCLUDE_PATH}" LIBRARY_PATH="$b/lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
export PATH="$b/bin:$PATH"
EOF
cat > "$bundle/bin/c++" <<'EOF'
#!/bin/sh
# The emulate device's host compiler on the GPU machine (env.sh): the
# machine's own, without the bundle's libraries.
[ -n "$AOTC_REAL_CXX" ] || { echo "gpu-bundle: no host C++ compiler (c++, g++) on this machine" >&2; exit 1; }
unset LD_LIBRARY_PATH
exec "$AOTC_REAL_CXX" "$@"
EOF
chmod +x "$bundle/bin/c++"
cat > "$bundle/run.sh" <<'EOF'
#!/usr/bin/env bash
# The GPU check's entry point: bash gpu-bundle/run.sh [gpu_check.py run options]
# Results under $OUT (gpu_check.json, gpu_check.md, gpu_check.log).
. "$(dirname "$0")/env.sh"
set -o pipefail
"$py" "$b/src/scripts/gpu_check.py" run "$b/bin/aotc" "$b/lib/libaotc_runtime.so.0" "$out" "$@" 2>&1 | tee "$out/gpu_check.log"
EOF
cat > "$bundle/probe.sh" <<'EOF'
#!/usr/bin/env bash
# Where a GPU result parts from the emulate device's (scripts/gpu_probe.py):
# bash gpu-bundle/probe.sh [gpu_probe.py options]; its log under $OUT.
. "$(dirname "$0")/env.sh"
set -o pipefail
"$py" "$b/src/scripts/gpu_probe.py" "$b/bin/aotc" "$out" "$@" 2>&1 | tee "$out/gpu_probe.log"
EOF
chmod +x "$bundle/run.sh" "$bundle/probe.sh"
size=$(du -sb "$bundle" | cut -f1)
mib=$(awk -v s="$size" 'BEGIN {printf "%.1f", s / 1048576}')
if [ "$size" -gt $((40 * 1024 * 1024)) ]; then
  echo "gpu_check.sh: the bundle is $mib MiB, over the 40 MiB it must fit in" >&2
  exit 1
fi
if [ "$host_test" = 1 ]; then
  # The join on hand-made figures, then the same entry point on this
  # machine's CPU (the emulate device) at tiny sizes; any failure fails.
  py=${PYTHON:-/usr/bin/python3}
  "$py" "$bundle/src/scripts/gpu_check.py" selftest
  OUT=$bundle/out PYTHON=$py bash "$bundle/run.sh" --device emulate --quick --iters 1 --strict "${extra[@]}" || exit $?
  # The probe's script end to end at a tiny size (emulate against emulate: no step parts).
  OUT=$bundle/out PYTHON=$py bash "$bundle/probe.sh" --device emulate --side 32 > /dev/null || { tail -30 "$bundle/out/gpu_probe.log"; exit 1; }
  exit 0
fi
rel=${bundle#"$root"/}
cat <<EOF
gpu_check.sh: bundle $bundle: $mib MiB ($(ls "$bundle/lib" | grep -c '\.so') shared libraries: $(ls "$bundle/lib" | grep '\.so' | tr '\n' ' '))
The device call (from the session whose checkout holds $rel; the check ends by itself within about 6 minutes):
  run(command="bash $rel/run.sh", carry=["$rel"], timeout_s=420)
Results come back under \$OUT: gpu_check.md (the tables), gpu_check.json (every figure), gpu_check.log.
Options after run.sh go to scripts/gpu_check.py run (--budget SECONDS, default 330; --models; --precisions; --gpu NAME|FILE).
When a training gate fails (GPU results off where emulate's are not): the step where cuda and emulate part, each
side's gradients against float64, and compute-sanitizer's initcheck/racecheck/synccheck (about 3 minutes):
  run(command="bash $rel/probe.sh --batch 2", carry=["$rel"], timeout_s=400)
EOF
