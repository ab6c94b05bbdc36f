#!/usr/bin/env bash
# One answer: N MPI ranks x M workers train what one process with N x M workers trains, with
# dropout and batch normalization, in both modes, with one scores.csv row per worker: the same
# scores.csv bytes and the same model, since every layout adds the workers' buffers in the job's
# one order (src/parallel/sum_order.hpp; docs/DISTRIBUTED.md, "One answer"):
#  - 2 ranks x 1 worker and 2 ranks x 2 workers against 1 process x 2 and x 4 workers;
#  - 4 ranks x 1 worker against 1 process x 4 workers, synchronous: MPI's own sum of 4 ranks
#    adds in its order, so the ranks add their slices in the job's.
source "$(dirname "$0")/lib.sh"
if [ "${MPI_BUILT:-0}" != 1 ] || ! command -v mpirun >/dev/null; then
  echo "SKIP: dl-train was built without MPI or mpirun is missing (apt-get install libopenmpi-dev openmpi-bin)"
  exit 77
fi
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

# same_run MODE A B: the runs A and B wrote the same scores.csv and trained the same model.
same_run() {
  cmp "$WORK/$2/scores.csv" "$WORK/$3/scores.csv" || fail "$1: $3 wrote another scores.csv than $2"
  "$COMPARE_MODELS" "$WORK/$2/model.dlm" "$WORK/$3/model.dlm" 0 ||
    fail "$1: $3 trained another model than $2"
}

for mode in averaging synchronous; do
  common=("parallel.mode=$mode" parallel.reportScoreAfterAveraging=false)
  run "$mode-1x2" 1 2 "${common[@]}"
  run "$mode-2x1" 2 1 "${common[@]}"
  same_run "$mode" "$mode-1x2" "$mode-2x1"
  grep -q ",1,[0-9]" "$WORK/$mode-2x1/scores.csv" || fail "$mode: 2x1 lists no row of worker 1"

  run "$mode-1x4" 1 4 "${common[@]}"
  run "$mode-2x2" 2 2 "${common[@]}"
  for worker in 2 3; do
    grep -q "^0,[0-9]*,$worker," "$WORK/$mode-2x2/scores.csv" ||
      fail "$mode: 2 ranks x 2 workers list no row of global worker $worker"
  done
  same_run "$mode" "$mode-1x4" "$mode-2x2"
  echo "ok: $mode: 2x1 == 1x2 and 2x2 == 1x4 byte for byte"
done
run "synchronous-4x1" 4 1 parallel.mode=synchronous parallel.reportScoreAfterAveraging=false
same_run synchronous synchronous-1x4 synchronous-4x1
echo "ok: synchronous: 4x1 == 1x4 byte for byte"

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
