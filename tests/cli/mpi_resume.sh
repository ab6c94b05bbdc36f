#!/usr/bin/env bash
# A 2-rank job's mid-epoch checkpoint holds every rank's replicas: resumed with 2 ranks it
# continues bit for bit (averaging without averaged updaters, where each replica's updater state
# is its own); resumed with 1 rank it is refused naming both layouts and the fix, and
# --restart-epoch then goes on from its parameters.
source "$(dirname "$0")/lib.sh"
if [ "${MPI_BUILT:-0}" != 1 ] || ! command -v mpirun >/dev/null; then
  echo "SKIP: dl-train was built without MPI or mpirun is missing (apt-get install libopenmpi-dev openmpi-bin)"
  exit 77
fi
make_data "$WORK/data" 600 200
# 600 samples / (2 workers x 32) = 10 rounds per epoch: iteration 4 is in the middle of epoch 0.
readonly kMidEpochCheckpoint=checkpoint-e0-i4.dlck
common=(parallel.workers=1 parallel.averageUpdaters=false epochs=2
  output.checkpointEveryIterations=4 output.keepLast=20 output.scoreEveryIterations=2)

mapfile -t straight < <(small_args "$WORK/data" "$WORK/straight" "${common[@]}")
"$MPIRUN_LOCAL" -np 2 "$DL_TRAIN" "${straight[@]}" >"$WORK/straight.log" 2>&1 ||
  fail "straight 2-rank run failed: $(tail -5 "$WORK/straight.log")"
[ -f "$WORK/straight/checkpoints/$kMidEpochCheckpoint" ] ||
  fail "no $kMidEpochCheckpoint: $(ls "$WORK/straight/checkpoints")"

# The run as it was when that checkpoint was the newest: the later ones removed.
resumable_copy() {
  rm -rf "$WORK/$1"
  cp -r "$WORK/straight" "$WORK/$1"
  find "$WORK/$1/checkpoints" -type f ! -name "$kMidEpochCheckpoint" -delete
}

resumable_copy same
mapfile -t same < <(small_args "$WORK/data" "$WORK/same" "${common[@]}")
"$MPIRUN_LOCAL" -np 2 "$DL_TRAIN" "${same[@]}" --resume >"$WORK/same.log" 2>&1 ||
  fail "2-rank resume failed: $(tail -5 "$WORK/same.log")"
grep -q "resume: .*$kMidEpochCheckpoint" "$WORK/same.log" ||
  fail "did not resume from $kMidEpochCheckpoint: $(grep resume "$WORK/same.log")"
cmp "$WORK/straight/scores.csv" "$WORK/same/scores.csv" || fail "resumed scores.csv differs"
"$COMPARE_MODELS" "$WORK/straight/model.dlm" "$WORK/same/model.dlm" 0 ||
  fail "the 2-rank run resumed with 2 ranks differs from the uninterrupted one"
echo "ok: 2 ranks resumed with 2 ranks: bit-exact"

resumable_copy fewer
mapfile -t fewer < <(small_args "$WORK/data" "$WORK/fewer" "${common[@]}")
expect_failure 4 "$kMidEpochCheckpoint: the job's layout \(ranks x workers\) differs" \
  "parallel.ranks: 2 -> 1" "written by 2 ranks x 1 worker, resumed by 1 rank x 1 worker" \
  "mpirun -np 2" "--restart-epoch" -- "$DL_TRAIN" "${fewer[@]}" --resume
"$DL_TRAIN" "${fewer[@]}" --resume --restart-epoch >"$WORK/restart.log" 2>&1 ||
  fail "--restart-epoch with 1 rank failed: $(tail -5 "$WORK/restart.log")"
grep -q "resume: --restart-epoch: epoch 1 starts afresh (parallel.ranks: 2 -> 1)" \
  "$WORK/restart.log" || fail "no restart line: $(grep resume "$WORK/restart.log")"
echo "ok: 2 ranks resumed with 1 rank: refused; --restart-epoch goes on"
