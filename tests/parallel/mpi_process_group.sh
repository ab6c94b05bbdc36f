#!/usr/bin/env bash
# The MPI process group across processes on this machine (meson tests mpi_smoke, mpi_abort).
#   smoke: 2, 3 and 5 ranks run every collective (3 and 5: sums in the tree order, not MPI's).
#   abort: rank 1 calls abort_job(3) while rank 0 waits in a barrier; the launcher must end the
#          whole job with exit code 3 well within the time limit, not leave rank 0 waiting.
# Exit 77 (skipped) when dl-train was built without MPI or mpirun is missing.
set -uo pipefail

readonly kAbortExitCode=3
readonly kAbortTimeLimitSeconds=60

if [[ "${MPI_BUILT:-0}" != 1 ]]; then
  echo "skipped: dl-train was built without MPI (install libopenmpi-dev, meson -Dmpi=enabled)"
  exit 77
fi
if [[ "${MPIRUN_FOUND:-0}" != 1 ]]; then
  echo "skipped: mpirun is not installed (Debian: openmpi-bin)"
  exit 77
fi

case "${1:-}" in
  smoke)
    for ranks in 2 3 5; do
      output="$("$MPIRUN_LOCAL" -np "$ranks" "$MPI_SMOKE" "$ranks" 2>&1)"
      status=$?
      echo "$output"
      if ((status != 0)); then
        echo "FAIL: $ranks ranks: exit status $status" >&2
        exit 1
      fi
      if ! grep -q "^mpi smoke: ok (MPI (.*), $ranks ranks)" <<<"$output"; then
        echo "FAIL: $ranks ranks: no 'mpi smoke: ok' line naming $ranks ranks" >&2
        exit 1
      fi
    done
    ;;
  abort)
    start=$SECONDS
    timeout "$kAbortTimeLimitSeconds" "$MPIRUN_LOCAL" -np 2 "$MPI_SMOKE" 2 --abort 1
    status=$?
    echo "launcher exit status $status after $((SECONDS - start)) s"
    if ((status != kAbortExitCode)); then
      echo "FAIL: expected the job to end with exit status $kAbortExitCode (124: timed out," \
        "a rank was left waiting)" >&2
      exit 1
    fi
    ;;
  *)
    echo "usage: mpi_process_group.sh smoke|abort" >&2
    exit 2
    ;;
esac
echo "PASS: $1"
