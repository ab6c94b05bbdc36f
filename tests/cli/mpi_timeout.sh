#!/usr/bin/env bash
# A rank that stops without dying (SIGSTOP: as a hung file system or a debugger would hold it)
# no longer leaves the others waiting in a collective for ever: after parallel.timeout seconds the
# waiting rank names the call and ends the job (exit 1), and the last checkpoint stays valid: the
# job resumed with the same 2 ranks ends as one never stopped.
source "$(dirname "$0")/lib.sh"
if [ "${MPI_BUILT:-0}" != 1 ] || ! command -v mpirun >/dev/null; then
  echo "SKIP: dl-train was built without MPI or mpirun is missing (apt-get install libopenmpi-dev openmpi-bin)"
  exit 77
fi
readonly kTimeoutSeconds=3
readonly kEndSeconds=30   # from the stop, the job must end well within this
readonly kGuardSeconds=90 # the whole stopped job, should the timeout not work (a hang: 137)
readonly kSyncPauseMs=150
readonly kPollSeconds=0.05
make_data "$WORK/data" 600 200
common=(parallel.workers=1 epochs=2 output.checkpointEveryIterations=4
  output.scoreEveryIterations=2 "parallel.timeout=$kTimeoutSeconds")

mapfile -t straight < <(small_args "$WORK/data" "$WORK/straight" "${common[@]}")
"$MPIRUN_LOCAL" -np 2 "$DL_TRAIN" "${straight[@]}" >"$WORK/straight.log" 2>&1 ||
  fail "straight 2-rank run failed: $(tail -5 "$WORK/straight.log")"

mapfile -t stopped < <(small_args "$WORK/data" "$WORK/stopped" "${common[@]}")
DL_TRAIN_TEST_SYNC_PAUSE_MS=$kSyncPauseMs timeout -s KILL "$kGuardSeconds" \
  "$MPIRUN_LOCAL" -np 2 "$DL_TRAIN" "${stopped[@]}" >"$WORK/stopped.log" 2>"$WORK/stopped.err" &
guarded=$!
for _ in $(seq 1 600); do
  [ -f "$WORK/stopped/checkpoints/checkpoint-e0-i4.dlck" ] && break
  sleep "$kPollSeconds"
done
launcher=$(pgrep -P "$guarded")
victim=
for child in $(pgrep -P "$launcher"); do
  tr '\0' '\n' <"/proc/$child/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1" && victim=$child
done
[ -n "$victim" ] || fail "rank 1's process not found among the launcher's children"
start_ns=$(date +%s%N)
kill -STOP "$victim"
rc=0
wait "$guarded" || rc=$?
elapsed_ms=$((($(date +%s%N) - start_ns) / 1000000))
kill -KILL "$victim" 2>/dev/null || true # our own stopped rank, if the launcher left it
echo "rank 1 stopped: the launcher exited with $rc after $elapsed_ms ms: $(head -1 "$WORK/stopped.err")"
[ "$rc" = 1 ] || fail "expected exit 1 (137: the guard ended a hung job): $(head -3 "$WORK/stopped.err")"
((elapsed_ms >= kTimeoutSeconds * 1000)) || fail "ended after $elapsed_ms ms, before the timeout"
((elapsed_ms < kEndSeconds * 1000)) || fail "took $elapsed_ms ms"
grep -qE "^dl-train: rank 0: error: MPI_[A-Za-z]+.* has waited $kTimeoutSeconds s \(parallel.timeout\)" \
  "$WORK/stopped.err" || fail "no timeout message: $(head -3 "$WORK/stopped.err")"
[ ! -f "$WORK/stopped/model.dlm" ] || fail "the stopped job wrote a final model"

"$MPIRUN_LOCAL" -np 2 "$DL_TRAIN" "${stopped[@]}" --resume >"$WORK/resumed.log" 2>&1 ||
  fail "resume after the timeout failed: $(tail -5 "$WORK/resumed.log")"
cmp "$WORK/straight/scores.csv" "$WORK/stopped/scores.csv" || fail "resumed scores.csv differs"
"$COMPARE_MODELS" "$WORK/straight/model.dlm" "$WORK/stopped/model.dlm" 0 ||
  fail "the resumed job differs from the uninterrupted one"
echo "ok: a stopped rank ended the job after $elapsed_ms ms; resumed, it is bit-exact"
