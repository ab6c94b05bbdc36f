#!/usr/bin/env bash
# A launcher variable left in the environment (issue 10, requirement 6): every subcommand stops
# with the launcher-mismatch message on one line of stderr and exit 2 (a config error), never an
# abort with a backtrace.
source "$DL_SOURCE_DIR/tests/cli/lib.sh"

config="$DL_SOURCE_DIR/configs/lenet-small-test.yaml"
commands=(
  "validate --config-only --config $config"
  "train --config $config --set output.directory=$WORK/run"
  "--config $config --set output.directory=$WORK/run"
  "eval --model $WORK/none.dlm --config $config"
  "inspect --model $WORK/none.dlm"
  "info"
)
if [ "${MPI_BUILT:-0}" = 1 ]; then
  expect_open_mpi="mpirun \(Open MPI\) started 2 processes, but .* sees 1"
  expect_srun="srun started 4 processes, but .* sees 1"
else
  expect_open_mpi="started by mpirun \(Open MPI\) as 2 processes, but this dl-train was built without MPI"
  expect_srun="started by srun as 4 processes, but this dl-train was built without MPI"
fi
for command in "${commands[@]}"; do
  # shellcheck disable=SC2086  # the command's words
  expect_failure 2 "$expect_open_mpi" -- env OMPI_COMM_WORLD_SIZE=2 "$DL_TRAIN" $command
done
for command in "${commands[@]:0:2}"; do
  # shellcheck disable=SC2086
  expect_failure 2 "$expect_srun" -- env SLURM_PROCID=1 SLURM_STEP_NUM_TASKS=4 "$DL_TRAIN" $command
done
grep -q "terminate called" "$WORK/err.txt" && fail "an abort"
[ ! -e "$WORK/run" ] || fail "a refused start created its run directory"
echo "ok: launcher mismatch is exit 2 with one line for ${#commands[@]} command forms"
