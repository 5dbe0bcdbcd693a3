#!/usr/bin/env bash
# Benchmark of the nccl_tests role's build on a GPU host, in one run (docs/benchmarks.md has the
# figures measured on the H200):
#   1. the role, first run (connection local): builds nccl-tests for the GPUs found only;
#   2. upstream's plain build of the same source, `make MPI=1` with its default architecture list,
#      against the same CUDA, NCCL and MPI (read from the role's facts);
#   3. the role, second run: must compile nothing and report changed=0 (then once in check mode);
#   4. all_reduce_perf -g 1 -b 8 -e 1G -f 4 from the role's build.
#
# Usage: benchmarks/nccl_tests_build.sh SOURCE_DIR [OUT_DIR]
#   SOURCE_DIR  an nccl-tests source tree (e.g. `git archive v2.19.6` of NVIDIA/nccl-tests)
#   OUT_DIR     where the logs go (default ./nccl-tests-bench)
# Environment: ANSIBLE_PLAYBOOK (default ansible-playbook), BENCH_DIR (scratch, default
# /tmp/ncclkit-bench; removed first), NCCL_TESTS_EXTRA_VARS (more -e JSON for the role).
# Run it as root from the repository root (the role's playbook is tests/nccl_tests/playbook.yml).
set -uo pipefail

src=$(readlink -f "${1:?usage: $0 SOURCE_DIR [OUT_DIR]}")
out=$(mkdir -p "${2:-nccl-tests-bench}" && readlink -f "${2:-nccl-tests-bench}")
bench=${BENCH_DIR:-/tmp/ncclkit-bench}
playbook=${ANSIBLE_PLAYBOOK:-ansible-playbook}
py=$(command -v python3)
rm -rf "$bench" && mkdir -p "$bench"
summary="$out/summary.txt"
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

vars=$(printf '{"nccl_tests_install_dir": "%s/role", "nccl_tests_source": "controller", "nccl_tests_controller_path": "%s"}' "$bench" "$src")
role() { # log-name [ansible-playbook options]
  local log=$1; shift
  ANSIBLE_CALLBACK_RESULT_FORMAT=json ANSIBLE_NOCOLOR=1 "$playbook" -i localhost, -c local -e "ansible_python_interpreter=$py" -e "$vars" \
    ${NCCL_TESTS_EXTRA_VARS:+-e "$NCCL_TESTS_EXTRA_VARS"} "$@" tests/nccl_tests/playbook.yml >"$out/$log" 2>&1
}
recap() { grep -A1 '^PLAY RECAP' "$out/$1" | tail -n 1 | sed 's/  */ /g'; }

say "host: $(hostname), $(nproc) cores; $(nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader 2>&1 | head -n 1)"
say "nvcc: $(nvcc --version 2>/dev/null | grep release)"
say "source: $src ($(grep -h NCCL_TESTS_VERSION "$src"/src/*.h 2>/dev/null | head -n 1))"

# 1. The role, first run.
t0=$(now); role role-first.log; rc=$?; t1=$(now)
say "role first run: rc=$rc, $(secs "$t0" "$t1") s wall; $(recap role-first.log)"
current="$bench/role/current"
compile=$(sed -n 's/^compile seconds: //p' "$current/build.log" 2>/dev/null)
say "role build (make in the role's build script, nproc jobs): ${compile:-?} s"
say "role gencode: $(sed -n 's/.*"gencode": "\(.*\)",/\1/p' "$current/ncclkit-stamp.json" 2>/dev/null)"
cp "$current/ncclkit-stamp.json" "$out/" 2>/dev/null
eval "$("$py" - "$out/role-first.log" <<'EOF'
import json, re, shlex, sys
data = {}
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    m = re.match(r'^\s*"msg": ("NCCLKIT_FACTS .*")\s*$', line)
    if m:
        data = json.loads(json.loads(m.group(1)).split(" ", 2)[2])
        break
nccl, mpi, cuda = data.get("ncclkit_nccl") or {}, data.get("ncclkit_mpi") or {}, data.get("ncclkit_cuda") or {}
for k, v in {"NCCL_INC": nccl.get("include_dir", ""), "NCCL_LIB": nccl.get("library", ""),
             "MPI_INC": mpi.get("include_dir", ""), "MPI_LIBDIR": mpi.get("lib_dir", ""),
             "CUDA_DIR": cuda.get("home", "")}.items():
    print(f"{k}={shlex.quote(v)}")
EOF
)"
base="$bench/upstream"
mkdir -p "$base/nccl_home/lib" "$base/mpi_home"
cp -a "$src" "$base/src"  # a copy: the role's source (and its stamp) stays untouched
# libnccl.so for -lnccl: the pip wheel has only libnccl.so.2 (the role makes the same link).
ln -sfn "$NCCL_INC" "$base/nccl_home/include"
ln -sfn "$NCCL_LIB" "$base/nccl_home/lib/libnccl.so"
mpi_args=(MPI=1)
if [ -n "$MPI_INC" ]; then
  ln -sfn "$MPI_INC" "$base/mpi_home/include"
  ln -sfn "$MPI_LIBDIR" "$base/mpi_home/lib"
  mpi_args+=(MPI_HOME="$base/mpi_home")
fi
t0=$(now)
make -C "$base/src" -j "$(nproc)" "${mpi_args[@]}" CUDA_HOME="$CUDA_DIR" NCCL_HOME="$base/nccl_home" \
  BUILDDIR="$base/build" >"$out/upstream-make.log" 2>&1
rc=$?; t1=$(now)
upstream=$(secs "$t0" "$t1")
say "upstream make ${mpi_args[*]} (default NVCC_GENCODE, $(nproc) jobs): rc=$rc, $upstream s"
if [ -n "$compile" ]; then
  say "ratio role/upstream: $(awk -v a="$compile" -v b="$upstream" 'BEGIN { printf "%.2f", a / b }')"
fi

# 3. The role again: nothing to compile, changed=0; and in check mode.
t0=$(now); role role-second.log; rc=$?; t1=$(now)
say "role second run: rc=$rc, $(secs "$t0" "$t1") s wall; $(recap role-second.log)"
if grep -q 'Compile nccl-tests' "$out/role-second.log"; then say "second run COMPILED"; else say "second run compiled nothing"; fi
t0=$(now); role role-check.log --check; rc=$?; t1=$(now)
say "role check-mode run: rc=$rc, $(secs "$t0" "$t1") s wall; $(recap role-check.log)"
# shellcheck disable=SC2012  # build names (the role's keys) for a message
say "builds: $(ls "$bench/role/builds" | tr '\n' ' ')"

# 4. One GPU all_reduce.
say "ldd all_reduce_perf: $(ldd "$current/bin/all_reduce_perf" | grep -E 'libnccl|libmpi|libcudart' | tr -s ' \t' ' ' | tr '\n' ';')"
NCCL_NVLS_ENABLE=0 timeout 300 "$current/bin/all_reduce_perf" -g 1 -b 8 -e 1G -f 4 >"$out/all_reduce_perf.txt" 2>&1
say "all_reduce_perf -g 1 -b 8 -e 1G -f 4: rc=$?; $(grep -E 'Avg bus bandwidth' "$out/all_reduce_perf.txt")"
