#!/usr/bin/env bash
# One answer: N MPI ranks x M workers train what one process with N x M workers trains, with
# dropout and batch normalization, in both modes, with one scores.csv row per worker.
#  - 2 ranks x 1 worker against 1 process x 2 workers: byte-identical scores.csv and model (a sum
#    of two floats does not depend on the order);
#  - 2 ranks x 2 workers against 1 process x 4 workers: the same rows, scores and parameters
#    within the rounding of the cross-process sum ((b0+b1)+(b2+b3) against ((b0+b1)+b2)+b3:
#    docs/DISTRIBUTED.md, "One answer").
source "$(dirname "$0")/lib.sh"
if [ "${MPI_BUILT:-0}" != 1 ] || ! command -v mpirun >/dev/null; then
  echo "SKIP: dl-train was built without MPI or mpirun is missing (apt-get install libopenmpi-dev openmpi-bin)"
  exit 77
fi
readonly kRoundingTolerance=1e-5 # relative; measured 2.4e-7 (docs/DISTRIBUTED.md)
make_data "$WORK/data" 600 200
# The small network with batch normalization before the dense layer and dropout after it.
config="$WORK/dropout-bn.yaml"
sed -e 's|^  - dense: \(.*\)$|  - batchNormalization: {}\n  - dense: \1\n  - dropout: {dropOut: 0.5}|' \
  "$DL_SOURCE_DIR/configs/lenet-small-test.yaml" >"$config"
grep -q "dropout: {dropOut" "$config" || fail "could not add dropout to the test config"

# run NAME RANKS WORKERS [--set ARG]...: trains into $WORK/NAME.
run() {
  local name=$1 ranks=$2 workers=$3
  shift 3
  mapfile -t args < <(small_args "$WORK/data" "$WORK/$name" "parallel.workers=$workers" \
    output.scoreEveryIterations=2 "$@")
  args[1]=$config
  local launcher=()
  [ "$ranks" = 1 ] || launcher=("$MPIRUN_LOCAL" -np "$ranks")
  "${launcher[@]}" "$DL_TRAIN" "${args[@]}" >"$WORK/$name.log" 2>&1 ||
    fail "$name ($ranks rank(s) x $workers worker(s)) failed: $(tail -5 "$WORK/$name.log")"
}

# scores_within A B: the same rows (epoch, iteration, worker, learning rate) and scores within
# the rounding tolerance.
scores_within() {
  paste -d, "$1" "$2" | awk -F, -v tol="$kRoundingTolerance" '
    NR == 1 { next }
    $1 != $6 || $2 != $7 || $3 != $8 || $5 != $10 { print "row " NR ": " $0; bad = 1 }
    { d = $4 - $9; if (d < 0) d = -d; s = $4 < 0 ? -$4 : $4
      if (d > tol * s) { print "score of row " NR ": " $4 " vs " $9; bad = 1 } }
    END { exit bad }' || fail "$1 and $2 differ beyond rounding"
  [ "$(wc -l <"$1")" = "$(wc -l <"$2")" ] || fail "$1 and $2 have different row counts"
}

for mode in averaging synchronous; do
  common=("parallel.mode=$mode" parallel.reportScoreAfterAveraging=false)
  run "$mode-1x2" 1 2 "${common[@]}"
  run "$mode-2x1" 2 1 "${common[@]}"
  cmp "$WORK/$mode-1x2/scores.csv" "$WORK/$mode-2x1/scores.csv" ||
    fail "$mode: 2 ranks x 1 worker wrote another scores.csv than 1 process x 2 workers"
  "$COMPARE_MODELS" "$WORK/$mode-1x2/model.dlm" "$WORK/$mode-2x1/model.dlm" 0 ||
    fail "$mode: 2 ranks x 1 worker trained another model than 1 process x 2 workers"
  grep -q ",1,[0-9]" "$WORK/$mode-2x1/scores.csv" || fail "$mode: 2x1 lists no row of worker 1"

  run "$mode-1x4" 1 4 "${common[@]}"
  run "$mode-2x2" 2 2 "${common[@]}"
  for worker in 2 3; do
    grep -q "^0,[0-9]*,$worker," "$WORK/$mode-2x2/scores.csv" ||
      fail "$mode: 2 ranks x 2 workers list no row of global worker $worker"
  done
  scores_within "$WORK/$mode-1x4/scores.csv" "$WORK/$mode-2x2/scores.csv"
  "$COMPARE_MODELS" "$WORK/$mode-1x4/model.dlm" "$WORK/$mode-2x2/model.dlm" "$kRoundingTolerance" ||
    fail "$mode: 2 ranks x 2 workers differ from 1 process x 4 workers beyond rounding"
  echo "ok: $mode: 2x1 == 1x2 byte for byte; 2x2 == 1x4 within $kRoundingTolerance"
done

# Early stopping (at an epoch's end, on patience) and dynamic loss scaling take the same
# decisions on 2 ranks as on one process of 2 workers: the same rows, model, stop and scale.
for mode in averaging synchronous; do
  extra=("parallel.mode=$mode" parallel.reportScoreAfterAveraging=false epochs=6
    earlyStopping.enabled=true earlyStopping.patience=1 earlyStopping.minImprovement=0.5
    earlyStopping.scoreCalculator=accuracy lossScaling.mode=dynamic lossScaling.initialScale=1024
    lossScaling.growthInterval=4)
  run "$mode-stop-1x2" 1 2 "${extra[@]}"
  run "$mode-stop-2x1" 2 1 "${extra[@]}"
  cmp "$WORK/$mode-stop-1x2/scores.csv" "$WORK/$mode-stop-2x1/scores.csv" ||
    fail "$mode with early stopping and loss scaling: 2x1 wrote another scores.csv than 1x2"
  "$COMPARE_MODELS" "$WORK/$mode-stop-1x2/model.dlm" "$WORK/$mode-stop-2x1/model.dlm" 0 ||
    fail "$mode with early stopping and loss scaling: 2x1 trained another model than 1x2"
  for layout in 1x2 2x1; do
    grep -q '"stopped_by": "early stopping"' "$WORK/$mode-stop-$layout/summary.json" ||
      fail "$mode $layout: early stopping did not end the run"
  done
  scale() { grep -o '"final_scale": [0-9.e+]*' "$1" | head -1; }
  [ "$(scale "$WORK/$mode-stop-1x2/summary.json")" = "$(scale "$WORK/$mode-stop-2x1/summary.json")" ] ||
    fail "$mode: the final loss scales differ between 1x2 and 2x1"
  echo "ok: $mode with early stopping and loss scaling: 2x1 == 1x2 ($(scale "$WORK/$mode-stop-2x1/summary.json"))"
done
