#!/usr/bin/env bash
# scripts/cluster/dl-train.sbatch under a faked Slurm: the batch environment Slurm gives the
# script, an `srun` that checks the options the script must pass and runs the step with mpirun
# (scripts/mpirun_local.sh, SLURM_NTASKS ranks), and an `scontrol` that records the requeue.
# The job is preempted (SIGTERM to the batch script), must checkpoint and requeue itself, and
# its requeued start must resume and finish. Skipped without MPI.
source "$DL_SOURCE_DIR/tests/cli/lib.sh"
if [ "${MPI_BUILT:-0}" != 1 ] || ! command -v mpirun >/dev/null; then
  echo "SKIP: dl-train was built without MPI or mpirun is missing (apt-get install libopenmpi-dev openmpi-bin)"
  exit 77
fi
make_data "$WORK/data" 1200 200
fake="$WORK/fake-slurm"
mkdir -p "$fake"
log="$WORK/slurm-calls.log"

cat >"$fake/srun" <<'SRUN'
#!/usr/bin/env bash
# srun stand-in: the options it was given go to the log; the program runs under mpirun with
# SLURM_NTASKS ranks; SIGTERM goes to the ranks themselves, as srun passes signals to the tasks.
set -uo pipefail
echo "srun $*" >>"$FAKE_SLURM_LOG"
options=()
while [[ $# -gt 0 && $1 == --* ]]; do options+=("$1"); shift; done
for needed in --mpi= --cpus-per-task=$SLURM_CPUS_PER_TASK --kill-on-bad-exit=1; do
  printf '%s\n' "${options[@]}" | grep -q -- "^$needed" ||
    { echo "fake srun: the script did not pass $needed" >&2; exit 90; }
done
"$MPIRUN_LOCAL" -np "$SLURM_NTASKS" "$@" &
mpirun_pid=$!
trap 'pkill -TERM -P "$mpirun_pid"' TERM
status=0
wait "$mpirun_pid" || status=$?
while kill -0 "$mpirun_pid" 2>/dev/null; do status=0; wait "$mpirun_pid" || status=$?; done
exit "$status"
SRUN
cat >"$fake/scontrol" <<'SCONTROL'
#!/usr/bin/env bash
echo "scontrol $*" >>"$FAKE_SLURM_LOG"
SCONTROL
chmod +x "$fake/srun" "$fake/scontrol"

# The environment Slurm gives a batch script of a 1-node, 2-task job with 1 CPU per task.
slurm_env=(PATH="$fake:$PATH" FAKE_SLURM_LOG="$log" MPIRUN_LOCAL="$MPIRUN_LOCAL"
  SLURM_JOB_ID=4242 SLURM_NNODES=1 SLURM_NTASKS=2 SLURM_CPUS_PER_TASK=1 SLURM_PROCID=0
  SLURM_SUBMIT_DIR="$WORK" CONFIG="$DL_SOURCE_DIR/configs/lenet-small-test.yaml"
  DL_TRAIN="$DL_TRAIN")
sbatch_script="$DL_SOURCE_DIR/scripts/cluster/dl-train.sbatch"
mapfile -t args < <(small_args "$WORK/data" "$WORK/run" output.scoreEveryIterations=1)
# small_args starts with --config, which the script passes itself from CONFIG.
args=("${args[@]:2}")

# env execs bash, so $! is the batch script itself, as Slurm signals it.
env "${slurm_env[@]}" SLURM_RESTART_COUNT=0 bash "$sbatch_script" "${args[@]}" --set epochs=200 \
  >"$WORK/first.log" 2>&1 &
job=$!
wait_for_lines "$WORK/run/scores.csv" 4 300 0.2
kill -TERM "$job"
status=0
wait "$job" || status=$?
cat "$WORK/first.log"
[ "$status" = 0 ] || fail "the preempted job script exited $status, not 0 after requeueing"
grep -q "^scontrol requeue 4242$" "$log" || fail "no requeue: $(cat "$log")"
grep -q -- "--mpi=pmix" "$log" || fail "srun was not given the MPI plugin"
ls "$WORK/run/checkpoints/"*.dlck >/dev/null || fail "no checkpoint after SIGTERM"
grep -q "global workers: 2" "$WORK/first.log" || fail "the step did not run 2 ranks as one job"
stopped_epoch=$(tail -n 1 "$WORK/run/scores.csv" | cut -d, -f1)

# The requeued start: Slurm runs the script again with SLURM_RESTART_COUNT=1.
env "${slurm_env[@]}" SLURM_RESTART_COUNT=1 bash "$sbatch_script" "${args[@]}" \
  --set "epochs=$((stopped_epoch + 2))" >"$WORK/second.log" 2>&1 ||
  fail "the requeued job failed: $(tail -5 "$WORK/second.log")"
grep -q -- "--resume" "$log" || fail "the requeued start did not pass --resume"
grep -q "^resume: " "$WORK/second.log" || fail "the requeued start did not resume: $(head "$WORK/second.log")"
[ -f "$WORK/run/model.dlm" ] || fail "no model after the requeued start"
[ "$(grep -c '^srun ' "$log")" = 2 ] || fail "expected 2 srun steps: $(cat "$log")"
grep -E "^(dl-train.sbatch|resume|done):" "$WORK/second.log"
echo "calls to the faked Slurm:"
cat "$log"
echo "ok: preempted at epoch $stopped_epoch, checkpointed, requeued, resumed and finished"
