#!/usr/bin/env bash
# Builds the unit tests with AddressSanitizer and UndefinedBehaviorSanitizer in build-asan and
# runs them (the Catch2 suites only: the end-to-end cli_* and mpi_* shell tests are left to
# scripts/test.sh), then the CUDA kernels on the host grid under ThreadSanitizer in build-tsan.
# Any sanitizer report fails the suite that made it.
# Exit status: 0 when every suite passed, 1 otherwise.
#
# Usage: scripts/sanitize.sh
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
build_dir=build-asan
start=$SECONDS

# CUDA and MPI stay out: the sanitizers check the CPU code every test runs. -O1 with line tables
# (-g1) rather than -O2 -g: the sanitizers' advice for speed, and it compiles in about a third of
# the time (Catch2's main alone takes minutes at -O2 -g with both sanitizers), which matters on
# CI's two cores; reports still name file and line.
if [[ -f "$build_dir/meson-private/coredata.dat" ]]; then
  echo "==> sanitize: reconfiguring $build_dir"
  meson setup --reconfigure "$build_dir" >/dev/null
else
  echo "==> sanitize: configuring $build_dir (ASan + UBSan)"
  meson setup "$build_dir" -Db_sanitize=address,undefined -Db_lundef=false \
    -Dbuildtype=plain "-Dcpp_args=['-O1', '-g1']" -Dtests=true -Dcuda=disabled -Dmpi=disabled >/dev/null
fi

# The unit suites are the tests that run a Catch2 executable from the build (the shell tests
# run bash); their names and executables come from meson's own list. The CPU backend's ISA
# variants (*_isa_v3, *_isa_x86_64: the same sources and tests, compiled for other instruction
# sets) are left to scripts/test.sh's unsanitized run: they were 54 of this stage's 362
# compilations, the backend's heaviest, and 100 s of its test time, in a stage of 24 minutes on a
# 2-core Zen 2; their sources are checked here in the native build, whose tests run 8 lanes as
# well as the widest.
mapfile -t suites < <(meson introspect --tests "$build_dir" | python3 -c '
import json, os, re, sys
for test in json.load(sys.stdin):
    exe = test["cmd"][0]
    variant = re.search(r"_isa_(v3|x86_64)$", test["name"])
    if os.path.basename(exe).startswith("test_") and not variant:
        print(test["name"], os.path.relpath(exe, sys.argv[1]))
' "$build_dir")
if ((${#suites[@]} == 0)); then
  echo "sanitize.sh: found no unit test suites in $build_dir" >&2
  exit 1
fi
names=() targets=()
for suite in "${suites[@]}"; do
  names+=("${suite%% *}")
  targets+=("${suite#* }")
done

echo "==> sanitize: building ${names[*]}"
ninja -C "$build_dir" -j2 "${targets[@]}"

# UBSan reports stop the test (by default they are printed and execution goes on); LSan checks
# for leaks at exit.
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# allocator_may_return_null: an allocation too large for any memory must fail as it does without
# the sanitizer (nullptr or bad_alloc), so the out-of-memory tests see dl-train's own error.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:allocator_may_return_null=1
echo "==> sanitize: running ${names[*]}"
status=0
meson test -C "$build_dir" --no-rebuild --print-errorlogs --num-processes 1 "${names[@]}" ||
  status=$?
echo "==> sanitize: ASan + UBSan: $((SECONDS - start)) s"

# The CUDA kernels on the host grid once more under ThreadSanitizer, the CPU backend's thread
# pool (its helpers join and leave calls through atomics alone) and the GPU collective on the
# host (nccl_on_host: worker threads, the emulator's progress thread and the stand-in NCCL's
# ranks), not every suite (a TSan build of all would double this script's time): a shared-memory
# access in a kernel that lacks its __syncthreads is a race there (docs/CUDA.md, "Kernels on the
# host grid").
# DL_SANITIZE_TSAN=0 skips it (about 1.5 minutes on two busy cores).
tsan_dir=build-tsan
tsan_start=$SECONDS
if [[ "${DL_SANITIZE_TSAN:-1}" == 0 ]]; then
  echo "==> sanitize: TSan pass skipped (DL_SANITIZE_TSAN=0)"
elif [[ -f "$tsan_dir/meson-private/coredata.dat" ]]; then
  meson setup --reconfigure "$tsan_dir" >/dev/null
else
  echo "==> sanitize: configuring $tsan_dir (TSan)"
  meson setup "$tsan_dir" -Db_sanitize=thread -Db_lundef=false \
    -Dbuildtype=plain "-Dcpp_args=['-O1', '-g1']" -Dtests=true -Dcuda=disabled -Dmpi=disabled >/dev/null
fi
if [[ "${DL_SANITIZE_TSAN:-1}" != 0 ]]; then
  echo "==> sanitize: building and running cuda_kernels_on_host, backend_thread_pool and nccl_on_host under TSan"
  ninja -C "$tsan_dir" -j2 tests/cuda/test_cuda_kernels_on_host tests/backend/test_backend_thread_pool \
    tests/cuda/test_nccl_on_host
  TSAN_OPTIONS=halt_on_error=1:exitcode=66 meson test -C "$tsan_dir" --no-rebuild --print-errorlogs \
    --num-processes 1 cuda_kernels_on_host backend_thread_pool nccl_on_host || status=$?
  echo "==> sanitize: TSan: $((SECONDS - tsan_start)) s"
fi
echo "==> sanitize: $((SECONDS - start)) s in all"
exit $((status != 0))
