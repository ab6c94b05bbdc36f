#!/usr/bin/env bash
# A rank killed mid-epoch (SIGKILL, as the out-of-memory killer does) ends the whole job quickly,
# the last checkpoint stays valid, and the job resumed with the same 2 ranks ends with the
# parameters and the score log of a job never killed (averaging without averaged updaters: each
# rank's replicas have their own updater state).
source "$(dirname "$0")/lib.sh"
if [ "${MPI_BUILT:-0}" != 1 ] || ! command -v mpirun >/dev/null; then
  echo "SKIP: dl-train was built without MPI or mpirun is missing (apt-get install libopenmpi-dev openmpi-bin)"
  exit 77
fi
readonly kEndSeconds=30         # from the kill to the launcher's exit, on a loaded CI machine
readonly kSyncPauseMs=150       # each sync point waits this long: time to kill mid-epoch
readonly kPollSeconds=0.05
make_data "$WORK/data" 600 200
common=(parallel.workers=1 parallel.averageUpdaters=false epochs=2
  output.checkpointEveryIterations=4 output.scoreEveryIterations=2)

mapfile -t straight < <(small_args "$WORK/data" "$WORK/straight" "${common[@]}")
"$MPIRUN_LOCAL" -np 2 "$DL_TRAIN" "${straight[@]}" >"$WORK/straight.log" 2>&1 ||
  fail "straight 2-rank run failed: $(tail -5 "$WORK/straight.log")"

# rank_pid LAUNCHER_PID RANK: the dl-train process of that rank among the launcher's children.
rank_pid() {
  local child
  for child in $(pgrep -P "$1"); do
    if tr '\0' '\n' <"/proc/$child/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2"; then
      echo "$child"
      return
    fi
  done
}

mapfile -t killed < <(small_args "$WORK/data" "$WORK/killed" "${common[@]}")
DL_TRAIN_TEST_SYNC_PAUSE_MS=$kSyncPauseMs "$MPIRUN_LOCAL" -np 2 "$DL_TRAIN" "${killed[@]}" \
  >"$WORK/killed.log" 2>&1 &
launcher=$!
# Kill rank 1 once the first mid-epoch checkpoint is there (iteration 4 of 10 in epoch 1).
for _ in $(seq 1 600); do
  [ -f "$WORK/killed/checkpoints/checkpoint-e0-i4.dlck" ] && break
  sleep "$kPollSeconds"
done
[ -f "$WORK/killed/checkpoints/checkpoint-e0-i4.dlck" ] || fail "no checkpoint to kill after"
victim=$(rank_pid "$launcher" 1)
[ -n "$victim" ] || fail "rank 1's process not found among the launcher's children"
start_ns=$(date +%s%N)
kill -KILL "$victim"
rc=0
wait "$launcher" || rc=$?
elapsed_ms=$((($(date +%s%N) - start_ns) / 1000000))
seconds="$((elapsed_ms / 1000)).$(printf '%03d' $((elapsed_ms % 1000)))"
[ "$rc" != 0 ] || fail "the job ended with exit 0 although rank 1 was killed"
echo "killed rank 1 (pid $victim): the launcher exited with $rc after $seconds s"
((elapsed_ms < kEndSeconds * 1000)) || fail "the job took $seconds s to end"
[ ! -f "$WORK/killed/model.dlm" ] || fail "the killed job wrote a final model"

mapfile -t resumed < <(small_args "$WORK/data" "$WORK/killed" "${common[@]}")
"$MPIRUN_LOCAL" -np 2 "$DL_TRAIN" "${resumed[@]}" --resume >"$WORK/resumed.log" 2>&1 ||
  fail "resume after the kill failed: $(tail -5 "$WORK/resumed.log")"
grep -q "resume: .*checkpoint-e0-i" "$WORK/resumed.log" ||
  fail "did not resume from a mid-epoch checkpoint: $(grep resume "$WORK/resumed.log")"
cmp "$WORK/straight/scores.csv" "$WORK/killed/scores.csv" || fail "resumed scores.csv differs"
"$COMPARE_MODELS" "$WORK/straight/model.dlm" "$WORK/killed/model.dlm" 0 ||
  fail "the killed and resumed job differs from the uninterrupted one"
echo "ok: a killed rank ended the job in $seconds s; resumed, it is bit-exact"
