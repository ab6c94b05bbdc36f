#!/usr/bin/env bash
# Proves dl-train's CUDA backend on the lent GPU machine, from the kit that
# scripts/device/build_kit.sh made (carried to the device with a `run` call; see
# docs/DEVICE_SESSION.md for the exact calls). Run from the repository root:
#
#   scripts/device/gpu_checks.sh STAGE [STAGE ...]
#
# Stages, in the order given:
#   tests     the CUDA test programs of the kit; fails when any [gpu] case skips
#   sanitize  test_cuda_backend's [gpu] cases under compute-sanitizer (memcheck)
#   train     Fashion-MNIST, one epoch, backend cuda: dtype FLOAT, HALF, BFLOAT16 with 1 worker,
#             2 workers averaging and 2 workers synchronous (one GPU)
#   bench     bench/gpu/pytorch_lenet_gpu.py: the same LeNet and recipe in PyTorch, float32,
#             fp16 and bf16, eager and torch.compile
#   scale     FLOAT, 1 worker, 3 epochs at batch 128, 512 and 2048: when images/s grows with the
#             batch about as fast as the batch, the step is bound by launches and host waits,
#             not by the GPU's arithmetic (what the CUDA-graph work must remove)
#   mpi       mpirun -np 1 dl-train, backend cuda, cuda.nccl always (NCCL bootstrapped over MPI
#             with one rank), from the MPI kit (device-kit-mpi)
#   graphs, profile, cifar, resnet, nccl2, cpuscale: see gpu_stages_more.sh (where scale and bench live too)
# Every invocation first prints the machine (nvidia-smi, CPU), where the CUDA libraries were
# found, and `dl-train info`; it stops with exit 3 when no GPU is visible.
#
# Every command's exit code and time are recorded; one failure does not stop the others. Exit
# code: 0 when every step passed, 1 when any failed, 2 for a usage error, 3 for no GPU. Output:
# a short line per step on stdout (the `run` reply keeps only the end), the full logs in
# $OUT/gpu_checks.log, the steps in $OUT/steps.tsv and, after train or bench, the results
# table in $OUT/gpu_results.md (printed last).
#
# Environment: KIT (default device-kit), MPI_KIT (default device-kit-mpi), OUT (default
# runs/gpu-checks), PYTHON (default: the first python3 that imports torch),
# GPU_CHECKS_BUDGET_S (default 560: steps that would end later are cut or skipped, so the
# command ends inside a 600 s `run` call), TRAIN_SET (extra dl-train overrides, space-separated
# k=v, applied last to every train and mpi run), BENCH_ARGS (extra pytorch_lenet_gpu.py
# arguments, e.g. "--modes eager"), GPU_CHECKS_ALLOW_NO_GPU=1 (run the stages anyway:
# for testing this script on a machine without a GPU).
set -uo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo_root" || exit 2

readonly kStages=" tests sanitize train bench scale mpi graphs profile cifar resnet nccl2 cpuscale "
readonly kNoGpuExit=3
readonly kUsageExit=2
readonly kMinStepSeconds=20   # a step with less time left is skipped, not started
readonly kKillGraceSeconds=10
readonly kTestLimitSeconds=300
readonly kSanitizeLimitSeconds=300
readonly kTrainLimitSeconds=150
readonly kBenchLimitSeconds=400
readonly kMpiLimitSeconds=180
readonly kDtypes=(FLOAT HALF BFLOAT16)
# workers:mode of the train stage's runs
readonly kParallelSetups=(1:averaging 2:averaging 2:synchronous)
readonly kConfig=configs/fashion-mnist.yaml
readonly kScaleBatchSizes=(128 512 2048)
readonly kScaleEpochs=3
# The cifar stage's generated data: many rounds for 2 workers at the config's batch of 32.
readonly kCifarTrainImages=5000
readonly kCifarTestImages=1000
# bench/RESULTS.md, 2026-11-21: one epoch on the 2-core build machine, OpenBLAS, 1 worker.
readonly kCpuReference="CPU reference (bench/RESULTS.md, 2026-11-21, 1 epoch, 1 worker): dl-train accuracy 0.8367 at 7,336 images/s; PyTorch 0.8342 at 4,092 images/s"
readonly kCudaLibraries=(libcublas.so.13 libcublasLt.so.13 libcudnn.so.9 libnccl.so.2)

usage() {
  sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit "$kUsageExit"
}

(($# > 0)) || usage
for stage in "$@"; do
  [[ "$kStages" == *" $stage "* ]] || { echo "gpu_checks.sh: unknown stage '$stage'" >&2; usage; }
done

absolute() { [[ "$1" == /* ]] && echo "$1" || echo "$repo_root/$1"; }
KIT="$(absolute "${KIT:-device-kit}")"
MPI_KIT="$(absolute "${MPI_KIT:-device-kit-mpi}")"
OUT="${OUT:-$repo_root/runs/gpu-checks}"
budget_s="${GPU_CHECKS_BUDGET_S:-560}"
mkdir -p "$OUT"
work="$(mktemp -d -t gpu-checks.XXXXXX)"
log="$OUT/gpu_checks.log"
steps_tsv="$OUT/steps.tsv"
results_tsv="$work/results.tsv"
: >"$log"
printf 'step\trc\tseconds\tnote\n' >"$steps_tsv"
: >"$results_tsv"
deadline=$((SECONDS + budget_s))
failures=0

say() { echo "$*" | tee -a "$log"; }

# step NAME LIMIT_S COMMAND...: runs COMMAND with its output in $work/NAME.out (appended to the
# log), cut at LIMIT_S or at the budget's end; records and prints its exit code and time.
# Returns the command's exit code (124 when cut).
step() {
  local name="$1" limit="$2"
  shift 2
  local remaining=$((deadline - SECONDS))
  if ((remaining < kMinStepSeconds)); then
    say "SKIP  $name: only ${remaining}s of the ${budget_s}s budget left"
    printf '%s\t%s\t%s\t%s\n' "$name" skipped 0 "budget" >>"$steps_tsv"
    failures=$((failures + 1))
    return 125
  fi
  ((limit > remaining - kKillGraceSeconds)) && limit=$((remaining - kKillGraceSeconds))
  local start=$SECONDS rc
  {
    echo "===== $name: $* (limit ${limit}s)"
  } >>"$log"
  timeout --kill-after="$kKillGraceSeconds" "$limit" "$@" >"$work/$name.out" 2>&1
  rc=$?
  cat "$work/$name.out" >>"$log"
  local seconds=$((SECONDS - start)) note=""
  ((rc == 124 || rc == 137)) && note="cut at ${limit}s"
  printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$seconds" "$note" >>"$steps_tsv"
  echo "===== $name: exit $rc after ${seconds}s $note" >>"$log"
  if ((rc == 0)); then
    say "OK    $name (${seconds}s)"
  else
    failures=$((failures + 1))
    say "FAIL  $name: exit $rc after ${seconds}s $note; last lines:"
    tail -n 6 "$work/$name.out" | sed 's/^/      /' | tee -a "$log"
  fi
  return "$rc"
}

# A failed check that is not a command (a skipped [gpu] case, a missing file).
fail_check() {
  failures=$((failures + 1))
  say "FAIL  $*"
  printf '%s\t%s\t%s\t%s\n' "${1%%:*}" check 0 "$*" >>"$steps_tsv"
}

json_number() { # json_number FILE KEY: the number after "KEY": in FILE
  sed -n "s/.*\"$2\": *\([-0-9.eE+]*\).*/\1/p" "$1" | head -n 1
}

# ---------------------------------------------------------------------------------------------
# Environment: the machine, the CUDA libraries, the kit.

# Folders that hold the CUDA libraries: pip's nvidia-* packages (the ones PyTorch uses) first,
# then the toolkit, then whatever ldconfig knows.
find_cuda_library_dirs() {
  local roots=()
  local python
  for python in ${PYTHON:-} python3 /usr/bin/python3; do
    command -v "$python" >/dev/null 2>&1 || continue
    mapfile -t roots < <("$python" -c 'import nvidia; print("\n".join(nvidia.__path__))' 2>/dev/null)
    ((${#roots[@]} > 0)) && break
  done
  roots+=(/usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/nvidia/lib64)
  # Two passes: every library's pip or toolkit folder before any folder ldconfig knows. In one
  # pass, ldconfig's answer for one library (the system folder) came before pip's folder of the
  # next, and the system's libnccl.so.2 (without sm_90 kernels) shadowed pip's.
  local library
  {
    for library in "${kCudaLibraries[@]}"; do
      find "${roots[@]}" -name "$library" 2>/dev/null
    done
    for library in "${kCudaLibraries[@]}"; do
      ldconfig -p 2>/dev/null | sed -n "s/.*$library.* => //p"
    done
  } | xargs -r -n1 dirname | awk '!seen[$0]++'
}

python_with_torch() {
  local python
  for python in ${PYTHON:-} python3 /usr/bin/python3; do
    if command -v "$python" >/dev/null 2>&1 && "$python" -c 'import torch' >/dev/null 2>&1; then
      echo "$python"
      return 0
    fi
  done
  return 1
}

say "gpu_checks.sh $* — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(hostname), budget ${budget_s}s"
say "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores; $(uname -r)"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=index,name,memory.total,driver_version,compute_cap,clocks.sm,clocks.max.sm \
    --format=csv 2>&1 | tee -a "$log"
else
  say "nvidia-smi: not found"
fi

[[ -x "$KIT/bin/dl-train" ]] || {
  say "gpu_checks.sh: $KIT/bin/dl-train missing; carry the kit (scripts/device/build_kit.sh, carry: [\"device-kit\"])"
  exit "$kUsageExit"
}
[[ -f "$KIT/MANIFEST.txt" ]] && sed -n '1,6p' "$KIT/MANIFEST.txt" | sed 's/^/kit: /' | tee -a "$log"

mapfile -t cuda_dirs < <(find_cuda_library_dirs)
library_path="$(printf '%s:' "$KIT/lib" "${cuda_dirs[@]}")"
export LD_LIBRARY_PATH="${library_path%:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
say "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
ldd "$KIT/bin/dl-train" 2>&1 | grep -E "cuda|cublas|cudnn|nccl|not found" | sed 's/^[[:space:]]*/ldd: /' | tee -a "$log"
if ldd "$KIT/bin/dl-train" 2>&1 | grep -q "not found"; then
  say "gpu_checks.sh: dl-train needs libraries that were not found (above); install or carry them"
fi

info="$("$KIT/bin/dl-train" info 2>&1)"
info_rc=$?
echo "$info" | tee -a "$log"
visible="$(echo "$info" | sed -n 's/.* \([0-9][0-9]*\) device(s) visible.*/\1/p' | head -n 1)"
if ((info_rc != 0)) || [[ -z "$visible" || "$visible" == 0 ]]; then
  say "NO GPU VISIBLE: dl-train info exit $info_rc, '${visible:-?}' device(s) visible (reason above)"
  if [[ "${GPU_CHECKS_ALLOW_NO_GPU:-0}" != 1 ]]; then
    say "gpu_checks.sh: stopping (exit $kNoGpuExit): the stages need a GPU; GPU_CHECKS_ALLOW_NO_GPU=1 runs them anyway"
    rm -rf "$work"
    exit "$kNoGpuExit"
  fi
  say "GPU_CHECKS_ALLOW_NO_GPU=1: running the stages anyway; GPU steps will fail"
fi

extra_set=()
read -r -a train_overrides <<<"${TRAIN_SET:-}"
for override in "${train_overrides[@]}"; do
  extra_set+=(--set "$override")
done
read -r -a bench_args <<<"${BENCH_ARGS:-}"

data="$KIT/data/fashion-mnist"
data_overrides=(--set "data.trainImages=$data/train-images-idx3-ubyte.gz"
  --set "data.trainLabels=$data/train-labels-idx1-ubyte.gz"
  --set "data.testImages=$data/t10k-images-idx3-ubyte.gz"
  --set "data.testLabels=$data/t10k-labels-idx1-ubyte.gz")

# ---------------------------------------------------------------------------------------------
# Stages.

stage_tests() {
  local program name
  for program in "$KIT"/bin/test_*; do
    name="$(basename "$program")"
    step "$name" "$kTestLimitSeconds" "$program" --durations yes
    if grep -q "\[gpu\] test case(s) skipped\|skipping the \[gpu\] test cases" "$work/$name.out"; then
      fail_check "$name: [gpu] cases SKIPPED although a GPU should be visible: $(grep -m1 'skipp' "$work/$name.out")"
    fi
    grep -E "^(All tests passed|test cases:)" "$work/$name.out" | sed "s/^/      $name: /" | tee -a "$log"
  done
  local gpu_cases
  gpu_cases="$("$KIT/bin/test_cuda_backend" --list-test-names-only "[gpu]" 2>/dev/null | grep -c .)"
  say "      test_cuda_backend: ${gpu_cases:-0} [gpu] test case(s) listed"
  ((${gpu_cases:-0} > 0)) || fail_check "test_cuda_backend: no [gpu] test cases listed"
}

stage_sanitize() {
  local sanitizer
  sanitizer="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)"
  if [[ -z "$sanitizer" ]]; then
    fail_check "sanitize: compute-sanitizer not found"
    return
  fi
  # API errors are not reported: every CUDA call of ours is checked and a failing one fails its
  # test, while NCCL probes each of its kernels with cudaFuncGetAttributes and ignores the
  # "no kernel image" answers for the architectures it was not built for (24 such reports
  # on an H200, 2026-11-26, every one inside libnccl). Memory errors still fail the step.
  step memcheck "$kSanitizeLimitSeconds" "$sanitizer" --tool memcheck --report-api-errors no \
    --error-exitcode 9 \
    "$KIT/bin/test_cuda_backend" "[gpu]"
  grep -E "ERROR SUMMARY|All tests passed|test cases:" "$work/memcheck.out" | sed 's/^/      /' | tee -a "$log"
}

# config_run CONFIG NAME ARGS...: one dl-train epoch of CONFIG on the GPU (ARGS may set more);
# its summary goes into the results. train_run NAME ARGS...: the same for the Fashion-MNIST
# config on the kit's data.
config_run() {
  local config="$1" name="$2"
  shift 2
  local run_dir="$work/$name"
  step "$name" "$kTrainLimitSeconds" "$KIT/bin/dl-train" --config "$config" --set backend=cuda \
    --set epochs=1 --set "output.directory=$run_dir" --overwrite "$@" "${extra_set[@]}"
  local rc=$? summary="$run_dir/summary.json"
  if [[ -f "$summary" ]]; then
    {
      echo "----- $name summary.json"
      cat "$summary"
    } >>"$log"
    printf 'dl-train\t%s\t%s\t%s\t%s\t%s\n' "$name" "$(json_number "$summary" train_images_per_second)" \
      "$(json_number "$summary" test_accuracy)" "$(json_number "$summary" train_seconds)" "$rc" >>"$results_tsv"
  else
    printf 'dl-train\t%s\t\t\t\t%s\n' "$name" "$rc" >>"$results_tsv"
  fi
}

train_run() {
  local name="$1"
  shift
  config_run "$kConfig" "$name" "${data_overrides[@]}" "$@"
}

stage_train() {
  local dtype setup workers mode
  # Every dtype with 1 worker first: those matter most when the budget runs out.
  for setup in "${kParallelSetups[@]}"; do
    for dtype in "${kDtypes[@]}"; do
      workers="${setup%%:*}"
      mode="${setup#*:}"
      train_run "train-$dtype-${workers}w-$mode" --set "dtype=$dtype" \
        --set "parallel.workers=$workers" --set "parallel.mode=$mode"
    done
  done
}

# use_mpi_kit STAGE: Open MPI from the MPI kit, for this process and what it starts; fails the
# stage's check (returns 1) when the kit is missing.
use_mpi_kit() {
  if [[ ! -x "$MPI_KIT/bin/mpirun" || ! -x "$MPI_KIT/bin/dl-train" ]]; then
    fail_check "$1: $MPI_KIT/bin/mpirun or dl-train missing; carry device-kit-mpi (scripts/device/build_kit.sh --mpi)"
    return 1
  fi
  # Open MPI finds its plugins, help texts and default parameters relative to OPAL_PREFIX.
  export OPAL_PREFIX="$MPI_KIT"
  export PMIX_PKGLIBDIR="$MPI_KIT/pmix/lib/pmix" PMIX_PKGDATADIR="$MPI_KIT/pmix/share/pmix"
  [[ ":$LD_LIBRARY_PATH:" == *":$MPI_KIT/lib:"* ]] || export LD_LIBRARY_PATH="$MPI_KIT/lib:$LD_LIBRARY_PATH"
}

stage_mpi() {
  local mpirun="$MPI_KIT/bin/mpirun"
  use_mpi_kit mpi || return
  step mpi-version 30 "$mpirun" --version
  local run_dir="$work/mpi-1rank"
  # cuda.nccl=always: one rank with one GPU still bootstraps NCCL over MPI and sums through it.
  # NCCL's INIT messages show the communicator being made.
  export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT
  step mpi-1rank-FLOAT "$kMpiLimitSeconds" "$mpirun" --allow-run-as-root -np 1 --bind-to none \
    --mca btl self,vader -x LD_LIBRARY_PATH -x OPAL_PREFIX -x PMIX_PKGLIBDIR -x PMIX_PKGDATADIR \
    -x NCCL_DEBUG -x NCCL_DEBUG_SUBSYS \
    "$MPI_KIT/bin/dl-train" --config "$kConfig" --set backend=cuda --set cuda.nccl=always --set epochs=1 \
    "${data_overrides[@]}" --set "output.directory=$run_dir" --overwrite "${extra_set[@]}"
  local rc=$?
  # The lines that prove it: NCCL's communicator made (version, Init COMPLETE), dl-train's
  # collective and end. NCCL 2.28 prints dozens of INIT lines (channels, plugins) before
  # COMPLETE, so taking the first matches would cut the proof off.
  grep -E "NCCL version|Init COMPLETE|^collective|NCCL over|^done:|[Ee]rror" "$work/mpi-1rank-FLOAT.out" |
    head -n 20 | sed 's/^/      /' | tee -a "$log"
  if [[ -f "$run_dir/summary.json" ]]; then
    printf 'dl-train\t%s\t%s\t%s\t%s\t%s\n' "mpi-1rank-FLOAT" \
      "$(json_number "$run_dir/summary.json" train_images_per_second)" \
      "$(json_number "$run_dir/summary.json" test_accuracy)" \
      "$(json_number "$run_dir/summary.json" train_seconds)" "$rc" >>"$results_tsv"
  fi
}

# shellcheck source=gpu_stages_more.sh
source "$repo_root/scripts/device/gpu_stages_more.sh"

for stage in "$@"; do
  say "### stage $stage ($((deadline - SECONDS))s of the budget left)"
  "stage_$stage"
done

# ---------------------------------------------------------------------------------------------
# The results: where and what ran, then the tables of gpu_results_table.sh (every run, and
# dl-train / PyTorch for the train stage's 1-worker runs).
if [[ -s "$results_tsv" ]]; then
  {
    echo "# dl-train CUDA backend vs PyTorch: LeNet on Fashion-MNIST, batch 128 per worker (cifar-*: configs/cifar10.yaml)"
    echo
    echo "$(date -u +%Y-%m-%dT%H:%M:%SZ); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1);" \
      "kit: $(sed -n 's/^source: //p' "$KIT/MANIFEST.txt" 2>/dev/null)"
    echo
    "$repo_root/scripts/device/gpu_results_table.sh" "$results_tsv"
    echo
    echo "$kCpuReference"
  } >"$OUT/gpu_results.md"
fi

say "### steps (exit code, seconds):"
if command -v column >/dev/null 2>&1; then
  column -t -s $'\t' "$steps_tsv" | tee -a "$log"
else
  tee -a "$log" <"$steps_tsv"
fi
if [[ -f "$OUT/gpu_results.md" ]]; then
  tee -a "$log" <"$OUT/gpu_results.md"
fi
say "gpu_checks.sh: $failures failure(s); logs in $OUT"
rm -rf "$work"
((failures == 0))
