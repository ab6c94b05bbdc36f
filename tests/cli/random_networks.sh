#!/usr/bin/env bash
# Networks no test names, as a user runs them: random_network_config's graphs (tests/nn/
# random_network.hpp: residual blocks, concat branches, skips from far up, every activation,
# batch normalization in both orders, pooling, dropout, global pooling, dense layers) on the
# generated IDX digits (odd seeds) or on CSV rows (even seeds). Each trains two epochs straight and one epoch then --resume for the
# second, which must give the same scores.csv and final model; 2 MPI ranks of 1 worker must train
# what 1 process of 2 workers trains; predict writes its probabilities,
# export writes ONNX, and onnx_reference.py (Debian's onnx checker, a NumPy interpreter) must
# compute predict's probabilities from that file.
source "$(dirname "$0")/lib.sh"
: "${RANDOM_NETWORK:?RANDOM_NETWORK must name the random_network_config tool}"
: "${PYTHON3:?PYTHON3 must name python3}"
: "${COMPARE_MODELS:?COMPARE_MODELS must name the compare_models tool}"
networks=${RANDOM_NETWORKS:-6}
onnx_ok=1
"$PYTHON3" -c 'import onnx, numpy' 2>/dev/null || {
  onnx_ok=0
  echo "note: $PYTHON3 cannot import onnx and numpy: the ONNX files are not checked"
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

# check_ranks (in the loop): 1 process x 2 workers and 2 MPI ranks x 1 worker are the same two
# global workers, so they train the same bits, in synchronous mode (seeds 1, 4, 5, 8, ...) and in
# averaging mode (the others).
check_ranks() {
  local mode=synchronous
  [ $((seed % 4)) -ge 2 ] && mode=averaging
  local sets=(--set parallel.mode=$mode --set parallel.averagingFrequency=2 --set epochs=2)
  "$DL_TRAIN" --config "$net/config.yaml" "${sets[@]}" --set parallel.workers=2 \
    --set "output.directory=$net/workers" >"$net/workers.log" 2>&1 ||
    fail "seed $seed: 2 workers ($mode) failed: $(tail -3 "$net/workers.log")"
  if [ "${MPI_BUILT:-0}" != 1 ] || ! command -v mpirun >/dev/null; then
    ranks_note="2 workers ($mode) trained; MPI part skipped: built without MPI or no mpirun"
    return
  fi
  "$MPIRUN_LOCAL" -np 2 "$DL_TRAIN" --config "$net/config.yaml" "${sets[@]}" \
    --set parallel.workers=1 --set "output.directory=$net/ranks" >"$net/ranks.log" 2>&1 ||
    fail "seed $seed: 2 ranks ($mode) failed: $(tail -3 "$net/ranks.log")"
  cmp -s "$net/workers/scores.csv" "$net/ranks/scores.csv" ||
    fail "seed $seed: 2 ranks' scores.csv differs from 2 workers' ($mode)"$'\n'"$(cat "$net/network.yaml")"
  "$COMPARE_MODELS" "$net/workers/model.dlm" "$net/ranks/model.dlm" 0 >"$net/compare.log" ||
    fail "seed $seed: 2 ranks x 1 worker differ from 1 process x 2 workers ($mode)"
  ranks_note="2 MPI ranks = 2 workers ($mode)"
}

make_data "$WORK/digits" 240 60
digits=$WORK/digits
for seed in $(seq 1 "$networks"); do
  net="$WORK/net$seed"
  mkdir -p "$net"
  # Odd seeds: images, the generated IDX digits (28x28, 10 classes); even seeds: CSV rows.
  if [ $((seed % 2)) = 1 ]; then
    "$RANDOM_NETWORK" "$seed" --input 28x28x1 --classes 10 >"$net/network.yaml"
    data="{trainImages: $digits/train-images-idx3-ubyte.gz, trainLabels: $digits/train-labels-idx1-ubyte.gz, testImages: $digits/t10k-images-idx3-ubyte.gz, testLabels: $digits/t10k-labels-idx1-ubyte.gz}"
    inputs=$digits/t10k-images-idx3-ubyte.gz
    format=idx
  else
    features=$((4 + seed))
    "$RANDOM_NETWORK" "$seed" --input "$features" --classes 3 >"$net/network.yaml"
    write_rows "$net/train.csv" 240 "$features" 3 "$seed"
    write_rows "$net/test.csv" 60 "$features" 3 "$((seed + 1000))"
    data="{format: csv, trainFile: $net/train.csv, testFile: $net/test.csv}"
    inputs=$net/test.csv
    format=csv
  fi
  cat "$net/network.yaml" - >"$net/config.yaml" <<YAML
backend: cpu
updater: {type: nesterovs, learningRate: 0.01, momentum: 0.9}
batchSize: 20
data: $data
output: {console: epochs}
YAML
  run() { "$DL_TRAIN" --config "$net/config.yaml" --set "output.directory=$1" --set "epochs=$2" "${@:3}"; }
  rc=0
  run "$net/straight" 2 >"$net/straight.log" 2>&1 || rc=$?
  # A random network may diverge (exit 5, the loss not finite): the one outcome besides success.
  if [ "$rc" = 5 ] && grep -q "loss is not finite" "$net/straight.log"; then
    echo "ok: seed $seed diverged: $(grep 'error:' "$net/straight.log")"
    continue
  fi
  [ "$rc" = 0 ] ||
    fail "seed $seed: training failed (exit $rc): $(tail -3 "$net/straight.log")"$'\n'"$(cat "$net/network.yaml")"
  run "$net/resumed" 1 >"$net/first.log" 2>&1 || fail "seed $seed: first epoch failed"
  run "$net/resumed" 2 --resume >"$net/second.log" 2>&1 ||
    fail "seed $seed: resume failed: $(tail -3 "$net/second.log")"
  cmp -s "$net/straight/scores.csv" "$net/resumed/scores.csv" ||
    fail "seed $seed: scores.csv differs after resume"$'\n'"$(cat "$net/network.yaml")"
  "$DL_TRAIN" eval --model "$net/straight/model.dlm" | grep -v '^model:' >"$net/eval-straight.txt"
  "$DL_TRAIN" eval --model "$net/resumed/model.dlm" | grep -v '^model:' >"$net/eval-resumed.txt"
  cmp -s "$net/eval-straight.txt" "$net/eval-resumed.txt" ||
    fail "seed $seed: the resumed model evaluates differently"
  check_ranks
  "$DL_TRAIN" predict --model "$net/straight/model.dlm" --input "$inputs" \
    --output "$net/predict.csv" 2>"$net/predict.log" ||
    fail "seed $seed: predict failed: $(cat "$net/predict.log")"
  rc=0
  "$DL_TRAIN" export --format onnx --model "$net/straight/model.dlm" --output "$net/model.onnx" \
    >"$net/export.log" 2>&1 || rc=$?
  if [ "$rc" = 2 ] && grep -q "built without protobuf" "$net/export.log"; then
    onnx_ok=0
  elif [ "$rc" != 0 ]; then
    fail "seed $seed: export failed (exit $rc): $(cat "$net/export.log")"
  fi
  if [ "$onnx_ok" = 1 ]; then
    "$PYTHON3" "$DL_SOURCE_DIR/tests/cli/onnx_reference.py" "$net/model.onnx" "$inputs" "$format" \
      "$net/predict.csv" >"$net/onnx.log" 2>&1 ||
      fail "seed $seed: the exported model does not check: $(tail -3 "$net/onnx.log")"$'\n'"$(cat "$net/network.yaml")"
  fi
  echo "ok: seed $seed ($(grep -c -- '^  - ' "$net/network.yaml") layers): resumed bit for bit, $ranks_note$([ "$onnx_ok" = 1 ] && echo ", ONNX: $(tail -1 "$net/onnx.log")")"
done
