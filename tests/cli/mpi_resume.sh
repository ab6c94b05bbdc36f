#!/usr/bin/env bash
# A 2-rank job's mid-epoch checkpoint holds every rank's replicas and the position in the
# epoch's order (averaging without averaged updaters, where each replica's updater state is its
# own):
#  - resumed with 2 ranks x 1 worker, or 1 rank x 2 workers (the same 2 global workers), it
#    continues bit for bit;
#  - resumed with 1 or 3 ranks (elastic), it says so in one line and goes on from the same sample
#    of the same order, re-sharded: the epoch trains each of its samples once.
source "$(dirname "$0")/lib.sh"
if [ "${MPI_BUILT:-0}" != 1 ] || ! command -v mpirun >/dev/null; then
  echo "SKIP: dl-train was built without MPI or mpirun is missing (apt-get install libopenmpi-dev openmpi-bin)"
  exit 77
fi
make_data "$WORK/data" 600 200
# 600 samples / (2 workers x 32) = 10 rounds per epoch: iteration 4 is in the middle of epoch 0.
readonly kMidEpochCheckpoint=checkpoint-e0-i4.dlck
# A checkpoint every round: the 3-rank job below also saves inside its re-sharded epoch.
common=(parallel.workers=1 parallel.averageUpdaters=false epochs=2
  output.checkpointEveryIterations=1 output.keepLast=50 output.scoreEveryIterations=2)

mapfile -t straight < <(small_args "$WORK/data" "$WORK/straight" "${common[@]}")
"$MPIRUN_LOCAL" -np 2 "$DL_TRAIN" "${straight[@]}" >"$WORK/straight.log" 2>&1 ||
  fail "straight 2-rank run failed: $(tail -5 "$WORK/straight.log")"
[ -f "$WORK/straight/checkpoints/$kMidEpochCheckpoint" ] ||
  fail "no $kMidEpochCheckpoint: $(ls "$WORK/straight/checkpoints")"

# resumable_copy NAME [FROM [CHECKPOINT]]: run FROM (straight) as it was when CHECKPOINT
# ($kMidEpochCheckpoint) was the newest: the later ones removed.
resumable_copy() {
  local from=${2:-straight} keep=${3:-$kMidEpochCheckpoint}
  rm -rf "$WORK/$1"
  cp -r "$WORK/$from" "$WORK/$1"
  find "$WORK/$1/checkpoints" -type f ! -name "$keep" -delete
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

# 1 process x 2 workers: the same global workers, so the same bits (cli_mpi_matrix).
resumable_copy threads
mapfile -t threads < <(small_args "$WORK/data" "$WORK/threads" "${common[@]}" parallel.workers=2)
"$DL_TRAIN" "${threads[@]}" --resume >"$WORK/threads.log" 2>&1 ||
  fail "1 x 2 resume failed: $(tail -5 "$WORK/threads.log")"
grep -q "written by 2 ranks x 1 worker, resumed by 1 rank x 2 workers: epoch 1 goes on after sample 256 of 600" \
  "$WORK/threads.log" || fail "no elastic line: $(grep resume "$WORK/threads.log")"
cmp "$WORK/straight/scores.csv" "$WORK/threads/scores.csv" || fail "1 x 2 resumed scores.csv differs"
"$COMPARE_MODELS" "$WORK/straight/model.dlm" "$WORK/threads/model.dlm" 0 ||
  fail "the 2-rank run resumed as 1 process x 2 workers differs from the uninterrupted one"
echo "ok: 2 ranks x 1 worker resumed as 1 x 2: bit-exact"

# samples_trained FILE: what the checkpoint says the run has trained.
samples_trained() {
  "$DL_TRAIN" inspect --json -m "$1" |
    "$PYTHON3" -c 'import json, sys; print(json.load(sys.stdin)["metadata"]["samples_trained"])'
}

for ranks in 1 3; do
  resumable_copy "elastic$ranks"
  mapfile -t elastic < <(small_args "$WORK/data" "$WORK/elastic$ranks" "${common[@]}")
  launcher=()
  [ "$ranks" = 1 ] || launcher=("$MPIRUN_LOCAL" -np "$ranks")
  "${launcher[@]}" "$DL_TRAIN" "${elastic[@]}" --resume >"$WORK/elastic$ranks.log" 2>&1 ||
    fail "resume with $ranks rank(s) failed: $(tail -5 "$WORK/elastic$ranks.log")"
  line=$(grep "resume: written by 2 ranks x 1 worker, resumed by $ranks rank" "$WORK/elastic$ranks.log") ||
    fail "no elastic line with $ranks rank(s): $(grep resume "$WORK/elastic$ranks.log")"
  [[ "$line" == *"epoch 1 goes on after sample 256 of 600 in the same order, re-sharded over $ranks worker"* ]] ||
    fail "elastic line: $line"
  [[ "$line" == *"updater state of saved worker g mod 2"* ]] || fail "no updater note: $line"
  # 256 samples before the checkpoint and 344 after it: each sample of epoch 1 once, then 600.
  # The end of epoch 1 is the first checkpoint named e1 (the epoch that comes next).
  end_iteration=$(ls "$WORK/elastic$ranks/checkpoints/" |
    sed -n 's/^checkpoint-e1-i\([0-9]*\)\.dlck$/\1/p' | sort -n | head -1)
  end_checkpoint="$WORK/elastic$ranks/checkpoints/checkpoint-e1-i$end_iteration.dlck"
  [ "$(samples_trained "$end_checkpoint")" = 600 ] ||
    fail "$ranks rank(s): epoch 1 did not train 600 samples ($end_checkpoint)"
  [ "$(samples_trained "$WORK/elastic$ranks/model.dlm")" = 1200 ] ||
    fail "$ranks rank(s): the run did not train 1200 samples"
  echo "ok: 2 ranks resumed with $ranks: $line"
done

# A checkpoint inside the re-sharded epoch (3 ranks resumed after sample 256: round 2 of rounds
# of 96 shifted by 64 samples; iteration 6 is after its second round) resumed by the same 3
# ranks goes on bit for bit.
resumable_copy again elastic3 checkpoint-e0-i6.dlck
mapfile -t again < <(small_args "$WORK/data" "$WORK/again" "${common[@]}")
"$MPIRUN_LOCAL" -np 3 "$DL_TRAIN" "${again[@]}" --resume >"$WORK/again.log" 2>&1 ||
  fail "3-rank resume inside the re-sharded epoch failed: $(tail -5 "$WORK/again.log")"
! grep -q "resume: written by" "$WORK/again.log" || fail "the same layout was taken for another"
cmp "$WORK/elastic3/scores.csv" "$WORK/again/scores.csv" || fail "re-sharded epoch: scores differ"
"$COMPARE_MODELS" "$WORK/elastic3/model.dlm" "$WORK/again/model.dlm" 0 ||
  fail "resumed inside the re-sharded epoch, the 3-rank job differs from the uninterrupted one"
echo "ok: resumed inside a re-sharded epoch with the same layout: bit-exact"
