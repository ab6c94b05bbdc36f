#!/usr/bin/env bash
# Networks and recipes no test names, as a user runs them: random_network_config's graphs
# (tests/nn/random_network.hpp: residual blocks, concat branches, skips from far up, every
# activation, batch normalization in both orders, pooling, dropout, global pooling, dense layers)
# with a random recipe (updater, learning-rate schedule, gradient normalization, L2, a batch size
# that may leave a short last batch, early stopping), on the generated IDX digits (odd seeds) or on
# CSV rows (even seeds; seeds 4, 8, ... hold back a validation set). Each network
#  - trains two epochs, checkpointing every few steps; killed with SIGKILL in the second epoch and
#    resumed, it ends with the uninterrupted run's scores.csv, parameters and best model, bit for
#    bit;
#  - trains as 1 process x 2 workers and as 2 MPI ranks x 1 worker (the same two global workers)
#    to the same bits, in synchronous mode (seeds 1, 4, 5, 8, ...) or averaging mode (the others);
#  - is read back by predict, exported to ONNX, and onnx_reference.py (Debian's onnx checker, a
#    NumPy interpreter) computes predict's probabilities from that file.
# RANDOM_NETWORKS=N runs N networks (default 6).
source "$(dirname "$0")/lib.sh"
: "${RANDOM_NETWORK:?RANDOM_NETWORK must name the random_network_config tool}"
: "${PYTHON3:?PYTHON3 must name python3}"
: "${COMPARE_MODELS:?COMPARE_MODELS must name the compare_models tool}"
networks=${RANDOM_NETWORKS:-6}
train_rows=600
test_rows=60
onnx_ok=1
"$PYTHON3" -c 'import onnx, numpy' 2>/dev/null || {
  onnx_ok=0
  echo "note: $PYTHON3 cannot import onnx and numpy: the ONNX files are not checked"
}
mpi_ok=1
[ "${MPI_BUILT:-0}" = 1 ] && command -v mpirun >/dev/null || {
  mpi_ok=0
  echo "note: dl-train built without MPI or no mpirun: the 2-rank runs are left out"
}

# write_rows FILE ROWS FEATURES CLASSES SEED: uniform features in [0, 1) to 3 decimals, the label
# last: the index of the largest of the first CLASSES features (something to learn).
write_rows() {
  "$PYTHON3" - "$@" <<'PY'
import random, sys
path, rows, features, classes, seed = sys.argv[1], *map(int, sys.argv[2:])
rng = random.Random(seed)
with open(path, "w") as f:
    for _ in range(rows):
        x = [round(rng.random(), 3) for _ in range(features)]
        label = max(range(min(classes, features)), key=lambda k: x[k])
        f.write(",".join(f"{v:.3f}" for v in x) + f",{label}\n")
PY
}

# network_config: the seed's network, recipe and data in $net/config.yaml; sets inputs and
# format (predict's input file and onnx_reference.py's format).
network_config() {
  local data
  if [ $((seed % 2)) = 1 ]; then
    "$RANDOM_NETWORK" "$seed" --input 28x28x1 --classes 10 --recipe >"$net/network.yaml"
    data="{trainImages: $digits/train-images-idx3-ubyte.gz, trainLabels: $digits/train-labels-idx1-ubyte.gz, testImages: $digits/t10k-images-idx3-ubyte.gz, testLabels: $digits/t10k-labels-idx1-ubyte.gz}"
    inputs=$digits/t10k-images-idx3-ubyte.gz
    format=idx
  else
    local features=$((4 + seed % 9))
    "$RANDOM_NETWORK" "$seed" --input "$features" --classes 3 --recipe >"$net/network.yaml"
    write_rows "$net/train.csv" "$train_rows" "$features" 3 "$seed"
    write_rows "$net/test.csv" "$test_rows" "$features" 3 "$((seed + 100000))"
    data="{format: csv, trainFile: $net/train.csv, testFile: $net/test.csv}"
    # Every other CSV network holds back a validation set, which early stopping then judges.
    [ $((seed % 4)) = 0 ] && data="${data%\}}, validationSplit: 0.2}"
    inputs=$net/test.csv
    format=csv
  fi
  cat "$net/network.yaml" - >"$net/config.yaml" <<YAML
backend: cpu
epochs: 2
data: $data
output: {console: epochs, scoreEveryIterations: 1, checkpointEveryIterations: 4, keepLast: 100}
YAML
}

# mention PATTERN FILE TEXT: TEXT where FILE has PATTERN (never a failing status).
mention() { if grep -q "$1" "$2"; then echo "$3"; fi; }
failing() { fail "seed $seed: $*"$'\n'"$(cat "$net/network.yaml")"; }
train() { "$DL_TRAIN" --config "$net/config.yaml" --set "output.directory=$1" "${@:2}"; }

# check_kill_resume: killed with SIGKILL halfway through the second epoch and resumed, the run
# ends where the uninterrupted one ($net/straight) did.
check_kill_resume() {
  local rows target pid rc=0
  rows=$(grep -c '^0,' "$net/straight/scores.csv")
  target=$((rows + rows / 2 + 1))
  # Paused a few ms at each step (fit_loop.cpp's test hook), so the kill lands where aimed; the
  # binary itself in the background (a function there would run in a subshell, whose pid $! is).
  DL_TRAIN_TEST_SYNC_PAUSE_MS=5 "$DL_TRAIN" --config "$net/config.yaml" \
    --set "output.directory=$net/killed" >"$net/killed.log" 2>&1 &
  pid=$!
  kill_at_lines "$pid" "$net/killed/scores.csv" "$target" 0.002
  wait "$pid" || rc=$?
  if [ "$rc" = 0 ]; then
    resume_note="finished before the kill at score row $target: no resume checked"
    return
  fi
  [ "$rc" = 137 ] || failing "the run to kill failed (exit $rc): $(tail -3 "$net/killed.log")"
  local killed_rows
  killed_rows=$(line_count "$net/killed/scores.csv")
  train "$net/killed" --resume >"$net/resumed.log" 2>&1 ||
    failing "resume failed: $(tail -3 "$net/resumed.log")"
  cmp -s "$net/straight/scores.csv" "$net/killed/scores.csv" || failing "scores.csv differs after resume"
  "$COMPARE_MODELS" "$net/straight/model.dlm" "$net/killed/model.dlm" 0 >"$net/compare.log" ||
    failing "the resumed model differs: $(tail -2 "$net/compare.log")"
  if [ -e "$net/straight/best_model.dlm" ]; then  # early stopping's best, kept across the kill
    "$COMPARE_MODELS" "$net/straight/best_model.dlm" "$net/killed/best_model.dlm" 0 \
      >"$net/compare-best.log" || failing "the resumed run's best_model.dlm differs"
  fi
  resume_note="killed at line $killed_rows of $(line_count "$net/straight/scores.csv") of scores.csv, resumed bit for bit"
}

# check_ranks: 1 process x 2 workers and 2 MPI ranks x 1 worker train the same bits.
check_ranks() {
  local mode=synchronous
  [ $((seed % 4)) -ge 2 ] && mode=averaging
  local sets=(--set parallel.mode=$mode --set parallel.averagingFrequency=2)
  train "$net/workers" "${sets[@]}" --set parallel.workers=2 >"$net/workers.log" 2>&1 ||
    failing "2 workers ($mode) failed: $(tail -3 "$net/workers.log")"
  if [ "$mpi_ok" = 0 ]; then
    ranks_note="2 workers ($mode) trained"
    return
  fi
  "$MPIRUN_LOCAL" -np 2 "$DL_TRAIN" --config "$net/config.yaml" "${sets[@]}" \
    --set parallel.workers=1 --set "output.directory=$net/ranks" >"$net/ranks.log" 2>&1 ||
    failing "2 ranks ($mode) failed: $(tail -3 "$net/ranks.log")"
  cmp -s "$net/workers/scores.csv" "$net/ranks/scores.csv" ||
    failing "2 ranks' scores.csv differs from 2 workers' ($mode)"
  "$COMPARE_MODELS" "$net/workers/model.dlm" "$net/ranks/model.dlm" 0 >"$net/compare.log" ||
    failing "2 ranks x 1 worker differ from 1 process x 2 workers ($mode)"
  ranks_note="2 MPI ranks = 2 workers ($mode)"
}

# check_export: predict reads the model back; its ONNX file computes predict's probabilities.
check_export() {
  local rc=0
  "$DL_TRAIN" predict --model "$net/straight/model.dlm" --input "$inputs" \
    --output "$net/predict.csv" 2>"$net/predict.log" || failing "predict failed: $(cat "$net/predict.log")"
  "$DL_TRAIN" export --format onnx --model "$net/straight/model.dlm" --output "$net/model.onnx" \
    >"$net/export.log" 2>&1 || rc=$?
  if [ "$rc" = 2 ] && grep -q "built without protobuf" "$net/export.log"; then
    onnx_ok=0
  elif [ "$rc" != 0 ]; then
    failing "export failed (exit $rc): $(cat "$net/export.log")"
  fi
  export_note="predict"
  [ "$onnx_ok" = 1 ] || return 0
  "$PYTHON3" "$DL_SOURCE_DIR/tests/cli/onnx_reference.py" "$net/model.onnx" "$inputs" "$format" \
    "$net/predict.csv" >"$net/onnx.log" 2>&1 ||
    failing "the exported model does not check: $(tail -3 "$net/onnx.log")"
  export_note="ONNX: $(tail -1 "$net/onnx.log")"
}

make_data "$WORK/digits" "$train_rows" "$test_rows"
digits=$WORK/digits
for seed in $(seq 1 "$networks"); do
  net="$WORK/net$seed"
  mkdir -p "$net"
  network_config
  rc=0
  train "$net/straight" >"$net/straight.log" 2>&1 || rc=$?
  # A random network may diverge (exit 5, the loss not finite): the one outcome besides success.
  if [ "$rc" = 5 ] && grep -q "loss is not finite" "$net/straight.log"; then
    echo "ok: seed $seed diverged: $(grep 'error:' "$net/straight.log")"
    continue
  fi
  [ "$rc" = 0 ] || failing "training failed (exit $rc): $(tail -3 "$net/straight.log")"
  check_kill_resume
  check_ranks
  check_export
  recipe="$(sed -n 's/^updater: {type: \([a-z]*\).*/\1/p' "$net/network.yaml"), $(sed -n 's/^learningRateSchedule: {type: \([a-zA-Z]*\).*/\1/p' "$net/network.yaml") schedule, $(sed -n 's/^gradientNormalization: //p' "$net/network.yaml")$(mention '^earlyStopping' "$net/network.yaml" ", early stopping")$(mention validationSplit "$net/config.yaml" ", validation set")"
  echo "ok: seed $seed ($(grep -c -- '^  - ' "$net/network.yaml") layers; $recipe): $resume_note; $ranks_note; $export_note"
done
