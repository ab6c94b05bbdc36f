#!/usr/bin/env bash
# The GPU collective on the host with NCCL ranks in separate MPI processes (the stand-in NCCL's
# ranks meet in shared memory; the unique id travels over MPI): 2 and 3 ranks sum and broadcast
# like a naive sum, GpuCollective over 2 processes, an injected asynchronous error ends the job
# with the NCCL message, and a rank killed inside a collective does not leave its peer waiting:
# the launcher ends the job (docs/DISTRIBUTED.md, "Failures and timeouts").
set -euo pipefail
: "${NCCL_STANDIN_RANKS:?NCCL_STANDIN_RANKS must name the nccl_standin_ranks program}"
: "${MPIRUN_LOCAL:?MPIRUN_LOCAL must name scripts/mpirun_local.sh}"
if [ "${MPI_BUILT:-0}" != 1 ] || ! command -v mpirun >/dev/null; then
  echo "SKIP: built without MPI or mpirun is missing (apt-get install libopenmpi-dev openmpi-bin)"
  exit 77
fi
readonly kEndSeconds=30  # from a failure to the launcher's exit, on a loaded 2-core machine
readonly kHangSeconds=90 # what a job that hangs is given before this test calls it a hang
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nccl-standin.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# run NAME NP MODE [FAULT]: mpirun -np NP nccl_standin_ranks MODE; output in $WORK/NAME.log,
# exit status in $rc, seconds taken in $took.
run() {
  local name=$1 np=$2 mode=$3 fault=${4:-}
  local start_ns
  start_ns=$(date +%s%N)
  rc=0
  DL_NCCL_STANDIN_FAULT="$fault" timeout "$kHangSeconds" "$MPIRUN_LOCAL" -x DL_NCCL_STANDIN_FAULT \
    -np "$np" "$NCCL_STANDIN_RANKS" "$mode" >"$WORK/$name.log" 2>&1 || rc=$?
  local ms=$((($(date +%s%N) - start_ns) / 1000000))
  took="$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
  echo "$name: exit $rc after ${took} s"
}

for np in 2 3; do
  run "nccl$np" "$np" nccl
  [ "$rc" = 0 ] || fail "$np ranks: $(tail -5 "$WORK/nccl$np.log")"
  [ "$(grep -c "ok nccl over $np process(es)" "$WORK/nccl$np.log")" = "$np" ] ||
    fail "not every one of $np ranks summed and broadcast: $(cat "$WORK/nccl$np.log")"
done

run gpu 2 gpu
[ "$rc" = 0 ] || fail "GpuCollective over 2 processes: $(tail -5 "$WORK/gpu.log")"
[ "$(grep -c "NCCL over 2 GPU(s) of 2 process(es)" "$WORK/gpu.log")" = 2 ] ||
  fail "GpuCollective did not use NCCL over both processes: $(cat "$WORK/gpu.log")"
[ "$(grep -c "ok gpu over 2 process(es)" "$WORK/gpu.log")" = 2 ] || fail "$(cat "$WORK/gpu.log")"

# Rank 1's 3rd collective fails asynchronously: a rank reports NCCL's error and ends the job.
run async 2 fail "rank=1,call=3,kind=async_error"
[ "$rc" = 1 ] || fail "an asynchronous NCCL error should end the job with 1, got $rc: $(tail -5 "$WORK/async.log")"
grep -q "a collective on this process's GPU failed" "$WORK/async.log" ||
  fail "no NCCL error reported: $(cat "$WORK/async.log")"
grep -q "DL_NCCL_STANDIN_FAULT" "$WORK/async.log" || fail "the error lost NCCL's reason"
awk -v t="$took" -v k="$kEndSeconds" 'BEGIN { exit !(t < k) }' || fail "took $took s"

# Rank 1 is killed (SIGKILL) inside its 3rd collective while rank 0 waits for it; NCCL itself
# would wait for ever, the launcher ends the job.
run die 2 fail "rank=1,call=3,kind=die"
[ "$rc" != 0 ] || fail "a killed rank's job should fail"
[ "$rc" != 124 ] || fail "the job hung after rank 1 was killed: $(tail -5 "$WORK/die.log")"
awk -v t="$took" -v k="$kEndSeconds" 'BEGIN { exit !(t < k) }' || fail "took $took s"
echo "ok: 2 and 3 ranks sum and broadcast across processes; async error and killed rank end the job"
