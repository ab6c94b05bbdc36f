#!/usr/bin/env bash
# A residual network as a user meets it: validate prints the graph (each layer's inputs) and the
# trainable count; it trains with 2 workers synchronous and learns; killed with SIGKILL mid-epoch
# and resumed, it ends with the uninterrupted run's scores.csv and parameters, bit for bit;
# 2 MPI ranks x 1 worker train what 1 process x 2 workers trains; eval and predict read it.
source "$(dirname "$0")/lib.sh"

make_data "$WORK/data" 1200 200

cat >"$WORK/residual.yaml" <<YAML
backend: cpu
seed: 11
weightInit: RELU
updater: {type: nesterovs, learningRate: 0.05, momentum: 0.9}
l2: 1.0e-4
l2Bias: 0
batchSize: 32
epochs: 2
inputType: {convolutionalFlat: {height: 28, width: 28, channels: 1}}
layers:
  - convolution: {name: stem, nOut: 8, kernelSize: 3, stride: 2, padding: 1, hasBias: false}
  - batchNormalization: {name: stem_bn}
  - activation: {name: stem_relu, activation: relu}
  - convolution: {name: b1_conv1, nOut: 8, kernelSize: 3, padding: 1, hasBias: false}
  - batchNormalization: {name: b1_bn1}
  - activation: {name: b1_relu, activation: relu}
  - convolution: {name: b1_conv2, nOut: 8, kernelSize: 3, padding: 1, hasBias: false}
  - batchNormalization: {name: b1_bn2}
  - add: {name: b1, inputs: [b1_bn2, stem_relu], activation: relu}
  - convolution: {name: b2_conv1, nOut: 16, kernelSize: 3, stride: 2, padding: 1, hasBias: false}
  - batchNormalization: {name: b2_bn1}
  - activation: {name: b2_relu, activation: relu}
  - convolution: {name: b2_conv2, nOut: 16, kernelSize: 3, padding: 1, hasBias: false}
  - batchNormalization: {name: b2_bn2}
  - convolution: {name: b2_proj, inputs: b1, nOut: 16, kernelSize: 1, stride: 2, hasBias: false}
  - batchNormalization: {name: b2_proj_bn}
  - add: {name: b2, inputs: [b2_bn2, b2_proj_bn], activation: relu}
  - globalPooling: {name: pool, poolingType: avg}
  - output: {nOut: 10, activation: softmax, lossFunction: mcxent}
data:
  trainImages: $WORK/data/train-images-idx3-ubyte.gz
  trainLabels: $WORK/data/train-labels-idx1-ubyte.gz
  testImages: $WORK/data/t10k-images-idx3-ubyte.gz
  testLabels: $WORK/data/t10k-labels-idx1-ubyte.gz
parallel: {mode: synchronous, workers: 2, prefetchBuffer: 2}
YAML
config=$WORK/residual.yaml

# validate: the graph as a table.
"$DL_TRAIN" validate --config "$config" >"$WORK/validate.txt"
grep -qE '^8 +b1 +add +b1_bn2, stem_relu +8x14x14 +0$' "$WORK/validate.txt" ||
  fail "validate's row for the first block's add: $(grep -E '^8 ' "$WORK/validate.txt")"
grep -qE '^14 +b2_proj +convolution +b1 +16x7x7 +128$' "$WORK/validate.txt" ||
  fail "validate's row for the projection: $(grep -E '^14 ' "$WORK/validate.txt")"
# Trainable: convolutions 72 + 576 + 576 + 1152 + 2304 + 128, batch normalization 2 x (8 x 3 +
# 16 x 3), output 16 x 10 + 10.
grep -q '^trainable parameters: 5122 ' "$WORK/validate.txt" ||
  fail "trainable count: $(grep parameters "$WORK/validate.txt")"
echo "ok: validate: $(grep -E 'parameters' "$WORK/validate.txt" | tr '\n' ' ')"

# Trains and learns: 2 workers synchronous, a checkpoint every 5 rounds.
settings=(--set output.checkpointEveryIterations=5 --set output.scoreEveryIterations=1
  --set output.keepLast=50)
"$DL_TRAIN" --config "$config" "${settings[@]}" --set "output.directory=$WORK/straight" \
  >"$WORK/straight.log" 2>&1 || fail "training failed: $(tail -5 "$WORK/straight.log")"
accuracy=$(sed -n 's/.*"test_accuracy": *\([0-9.]*\).*/\1/p' "$WORK/straight/summary.json" | head -1)
awk -v a="$accuracy" 'BEGIN { exit !(a >= 0.5) }' ||
  fail "test accuracy $accuracy after 2 epochs (expected >= 0.5 on the generated digits)"
echo "ok: 2 workers synchronous: test accuracy $accuracy"

# Killed mid-epoch 1, resumed: the same scores and parameters as the run never killed.
rows_per_epoch=$(grep -c '^0,' "$WORK/straight/scores.csv")
"$DL_TRAIN" --config "$config" "${settings[@]}" --set "output.directory=$WORK/killed" \
  >"$WORK/killed.log" 2>&1 &
pid=$!
target=$((rows_per_epoch + rows_per_epoch / 2 + 1))
kill_at_lines "$pid" "$WORK/killed/scores.csv" "$target" 0.005
rc=0
wait "$pid" || rc=$?
[ "$rc" = 137 ] || fail "the run to kill was not killed mid-run (exit $rc)"
"$DL_TRAIN" --config "$config" "${settings[@]}" --set "output.directory=$WORK/killed" --resume \
  >"$WORK/resumed.log" 2>&1 || fail "resume failed: $(tail -5 "$WORK/resumed.log")"
grep -q "resume: " "$WORK/resumed.log" || fail "no resume line: $(head -5 "$WORK/resumed.log")"
cmp "$WORK/straight/scores.csv" "$WORK/killed/scores.csv" || fail "resumed scores.csv differs"
"$COMPARE_MODELS" "$WORK/straight/model.dlm" "$WORK/killed/model.dlm" 0 ||
  fail "the resumed residual network differs from the uninterrupted one"
echo "ok: killed at score row $target of $(line_count "$WORK/straight/scores.csv"), resumed: bit-exact"

# eval and predict read the graph back from model.dlm.
"$DL_TRAIN" eval --json --model "$WORK/straight/model.dlm" --config "$config" >"$WORK/eval.json" \
  2>"$WORK/eval.err" || fail "eval failed: $(tail -3 "$WORK/eval.err")"
"$PYTHON3" - "$WORK/eval.json" "$WORK/straight/summary.json" <<'PY' || fail "eval disagrees with the run"
import json, sys
evaluation, summary = (json.load(open(p)) for p in sys.argv[1:3])
got, want = evaluation["evaluation"]["accuracy"], summary["test_accuracy"]
assert got == want, f"eval's accuracy {got}, the run's {want}"
assert evaluation["examples"] == 200, evaluation["examples"]
PY
"$DL_TRAIN" predict --model "$WORK/straight/model.dlm" \
  --input "$WORK/data/t10k-images-idx3-ubyte.gz" --output "$WORK/predict.csv" 2>/dev/null
[ "$(wc -l <"$WORK/predict.csv")" = 201 ] || fail "predict wrote $(wc -l <"$WORK/predict.csv") lines"
echo "ok: eval and predict"

# A config of the same parameter counts but another wiring (the projection reads the stem, of
# b1's shape) or another activation computes something else with the model's parameters: eval,
# predict and export refuse it (exit 4), naming the keys, and write nothing. They used to go on.
sed 's/{name: b2_proj, inputs: b1,/{name: b2_proj, inputs: stem_relu,/' "$config" >"$WORK/rewired.yaml"
sed 's/inputs: \[b2_bn2, b2_proj_bn\], activation: relu/inputs: [b2_bn2, b2_proj_bn], activation: tanh/' \
  "$config" >"$WORK/retuned.yaml"
! cmp -s "$config" "$WORK/rewired.yaml" && ! cmp -s "$config" "$WORK/retuned.yaml" ||
  fail "the sed edits of the config did not apply"
model=$WORK/straight/model.dlm
expect_failure 4 "saved from a different network than $WORK/rewired.yaml describes" \
  "layers.14.convolution.inputs.0: b1 -> stem_relu" -- \
  "$DL_TRAIN" eval --model "$model" --config "$WORK/rewired.yaml"
expect_failure 4 "layers.16.add.activation: relu -> tanh" -- "$DL_TRAIN" predict --model "$model" \
  --config "$WORK/retuned.yaml" --input "$WORK/data/t10k-images-idx3-ubyte.gz" \
  --output "$WORK/refused.csv"
[ ! -e "$WORK/refused.csv" ] || fail "the refused predict wrote $WORK/refused.csv"
expect_failure 4 "layers.14.convolution.inputs.0: b1 -> stem_relu" -- "$DL_TRAIN" export \
  --format onnx --model "$model" --config "$WORK/rewired.yaml" --output "$WORK/refused.onnx"
[ ! -e "$WORK/refused.onnx" ] || fail "the refused export wrote $WORK/refused.onnx"
# What acts while training alone (weight initialization, batch normalization's running-average
# decay) does not change what the saved model computes: eval takes such a config.
"$DL_TRAIN" eval --model "$model" --config "$config" --set weightInit=UNIFORM \
  --set layers.1.batchNormalization.decay=0.5 >/dev/null ||
  fail "eval refused a config that differs from the model's in training-only keys"
# A config that writes out what it may leave out (inputs naming the layer before, or the network's
# input for the first layer) describes the same network: eval takes it, as does --resume (both
# refused it as another network, exit 4).
sed -e 's/{name: stem, nOut: 8,/{name: stem, inputs: input, nOut: 8,/' \
  -e 's/{name: b1_conv1, nOut: 8,/{name: b1_conv1, inputs: stem_relu, nOut: 8,/' \
  "$config" >"$WORK/spelled.yaml"
! cmp -s "$config" "$WORK/spelled.yaml" || fail "the sed edits of the spelled-out config did not apply"
"$DL_TRAIN" eval --model "$model" --config "$WORK/spelled.yaml" >/dev/null 2>"$WORK/spelled.err" ||
  fail "eval refused a config that spells out default inputs: $(cat "$WORK/spelled.err")"
cp -r "$WORK/straight" "$WORK/spelled-run"
"$DL_TRAIN" --config "$WORK/spelled.yaml" "${settings[@]}" --set epochs=3 \
  --set "output.directory=$WORK/spelled-run" --resume >"$WORK/spelled-run.log" 2>&1 ||
  fail "--resume refused a config that spells out default inputs: $(tail -3 "$WORK/spelled-run.log")"
echo "ok: a config of another wiring or activation is refused by eval, predict and export;" \
  "one that spells out default inputs is the same network"

# 2 MPI ranks x 1 worker: the same global workers as 1 x 2, so the same bits.
if [ "${MPI_BUILT:-0}" = 1 ] && command -v mpirun >/dev/null; then
  "$MPIRUN_LOCAL" -np 2 "$DL_TRAIN" --config "$config" "${settings[@]}" \
    --set parallel.workers=1 --set "output.directory=$WORK/ranks" >"$WORK/ranks.log" 2>&1 ||
    fail "2-rank run failed: $(tail -5 "$WORK/ranks.log")"
  cmp "$WORK/straight/scores.csv" "$WORK/ranks/scores.csv" || fail "2 ranks' scores.csv differs"
  "$COMPARE_MODELS" "$WORK/straight/model.dlm" "$WORK/ranks/model.dlm" 0 ||
    fail "2 ranks x 1 worker differ from 1 process x 2 workers"
  echo "ok: 2 MPI ranks x 1 worker = 1 process x 2 workers, bit for bit"
else
  echo "note: MPI part skipped: dl-train built without MPI or mpirun missing"
fi
