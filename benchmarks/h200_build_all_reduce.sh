#!/usr/bin/env bash
# Build nccl-tests' all_reduce_perf (MPI=1, sm_90) against the NCCL of PyTorch's wheel on one GPU
# host, the quick way the H200 recordings use (the nccl_tests role does the same with its checks).
#
#   benchmarks/h200_build_all_reduce.sh NCCL_TESTS_SOURCE WORK_DIR   -> WORK_DIR/build/all_reduce_perf
# Prints the NCCL library folder, for LD_LIBRARY_PATH.
set -euo pipefail
src=$(readlink -f "$1"); w=$2
py=$(command -v python3)
nccl=$($py -c 'import nvidia.nccl as m; print(list(m.__path__)[0])')
mkdir -p "$w/nh/lib" "$w/mh"
ln -sfn "$nccl/include" "$w/nh/include"; ln -sfn "$nccl/lib/libnccl.so.2" "$w/nh/lib/libnccl.so"
ln -sfn "$(mpicc --showme:incdirs | awk '{print $1}')" "$w/mh/include"
ln -sfn "$(mpicc --showme:libdirs | awk '{print $1}')" "$w/mh/lib"
rm -rf "$w/src" && cp -a "$src" "$w/src"
make -C "$w/src/src" -j "$(nproc)" build MPI=1 MPI_HOME="$w/mh" NCCL_HOME="$w/nh" CUDA_HOME=/usr/local/cuda \
  NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" BUILDDIR="$w/build" BIN_FILES_LIST=all_reduce > "$w/make.log" 2>&1
echo "$nccl/lib"
