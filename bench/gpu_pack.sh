#!/usr/bin/env bash
# bench/gpu_pack.sh: builds the engine with the CUDA backend for one GPU architecture on this
# (GPU-less) development machine and packs the programs, the test suites and the shared libraries
# they need into one archive for a GPU machine that has a CUDA driver and toolkit but none of the
# engine's other dependencies (HDF5, inih, Criterion, OpenBLAS, oneDNN) and cannot fetch packages.
# bench/gpu_session.sh unpacks and runs it there.
#
#   bench/gpu_pack.sh [ARCH]        # ARCH: CUDA architecture, default 90 (H100, H200)
#
# Writes .gpu/ppo-gpu.tar.xz (build-gpu/bin, and under .gpu/run/ the libraries, the source path and
# the commit) and, when pip can fetch them, SB3's wheels into .gpu/whl; .gpu/ is ignored through
# .git/info/exclude, which this script extends. The build tree is build-gpu/ in the repository
# root; the test suites find their fixtures through the absolute source path compiled into them,
# so the session script links that path to wherever the repository lands on the GPU machine.
# glibc, libstdc++ and the CUDA libraries are the GPU machine's own (newer than this machine's;
# the driver matches its toolkit).
set -euo pipefail
arch=${1:-90}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

cmake -B build-gpu -DCMAKE_BUILD_TYPE=Release -DPPO_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" >/dev/null
cmake --build build-gpu -j"$(nproc)"

grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >>.git/info/exclude
rm -rf .gpu/stage && mkdir -p .gpu/stage/.gpu/run/lib
stage=.gpu/stage/.gpu/run
printf '%s\n' "$root" >$stage/source_dir
git rev-parse HEAD >$stage/commit
git status --porcelain | grep -q . && echo dirty >>$stage/commit || true
# The toolkit the module is built with: the device's driver must support it (gpu_session.sh says so)
nvcc --version 2>/dev/null | grep -m1 -o 'release [0-9.]*' >$stage/cuda_version || echo unknown >$stage/cuda_version

# Every shared library the binaries load, except the C runtime and the CUDA libraries.
skip='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcurand|libnccl)'
for bin in build-gpu/bin/*; do
  ldd "$bin" | awk '$3 ~ /^\// {print $3}'
done | sort -u | while read -r lib; do
  base=$(basename "$lib")
  [[ $base =~ $skip ]] || cp -L "$lib" $stage/lib/
done

tar -C "$root" -cJf .gpu/ppo-gpu.tar.xz build-gpu/bin -C .gpu/stage .gpu/run
rm -rf .gpu/stage
ls -l .gpu/ppo-gpu.tar.xz

# SB3 for the side-by-side run on the GPU: the device image has torch, numpy, pandas, matplotlib and
# cloudpickle but not these, and fetches nothing. The versions are the ones bench/sb3_compare.py was
# run with here; gpu_session.sh installs them when they are there and skips SB3 when they are not.
rm -rf .gpu/whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_17_x86_64 -d .gpu/whl stable-baselines3==2.9.2 gymnasium==1.4.0 \
  farama-notifications==0.0.6 || echo "gpu_pack: could not fetch SB3's wheels; the GPU session skips SB3" >&2
echo "carry .gpu and run: bash bench/gpu_session.sh"
