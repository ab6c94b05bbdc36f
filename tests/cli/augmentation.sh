#!/usr/bin/env bash
# The input pipeline on generated CIFAR-10 data: per-channel normalization computed from the
# training set, random crops (padding 4) and horizontal flips. The same config gives the same
# scores bit for bit; one epoch then --resume gives the scores of two straight epochs; a run
# resumed from inside an epoch too; the normalization reaches predict and the ONNX export; the
# device-resident path gives the host loader's scores.
source "$(dirname "$0")/lib.sh"
: "${MAKE_CIFAR:?MAKE_CIFAR must name the make_cifar_dataset tool}"
python=${PYTHON3:-/usr/bin/python3}
data="$WORK/cifar-10-batches-bin"
mkdir -p "$data"
"$MAKE_CIFAR" "$data" 200 40
cfg="$DL_SOURCE_DIR/configs/cifar10.yaml"
# run OUT EPOCHS [--resume] SET...: the Keras network, narrowed to stay quick, with the pipeline.
run() {
  local out=$1 epochs=$2
  shift 2
  local flags=()
  if [ "${1:-}" = --resume ]; then flags+=(--resume); shift; fi
  local sets=(--set backend=cpu --set "data.directory=$data" --set "output.directory=$WORK/$out"
    --set "epochs=$epochs" --set layers.0.nOut=4 --set layers.2.nOut=8 --set layers.4.nOut=16
    --set data.normalize=true --set data.randomCrop=4 --set data.horizontalFlip=true
    --set output.scoreEveryIterations=1 --set output.keepLast=50)
  for s in "$@"; do sets+=(--set "$s"); done
  "$DL_TRAIN" --config "$cfg" "${sets[@]}" "${flags[@]}"
}

run a 2 >"$WORK/a.txt"
grep -q "^input: normalize per channel, mean \[0\.[0-9]*, 0\.[0-9]*, 0\.[0-9]*\] std .*; random crop (padding 4); random horizontal flip$" \
  "$WORK/a.txt" || fail "no input line: $(grep -i input "$WORK/a.txt")"
grep "^input:" "$WORK/a.txt"
run b 2 >/dev/null
cmp "$WORK/a/scores.csv" "$WORK/b/scores.csv" || fail "the same config gave other scores"
echo "ok: the same config, the same scores.csv"

# Without augmentation the scores differ (the draws do something).
run plain 2 data.randomCrop=0 data.horizontalFlip=false >/dev/null
! cmp -s "$WORK/a/scores.csv" "$WORK/plain/scores.csv" || fail "crops and flips changed nothing"

# One epoch, then --resume for the second: the straight run's scores.
run r 1 >/dev/null
run r 2 --resume >"$WORK/r.txt"
cmp "$WORK/a/scores.csv" "$WORK/r/scores.csv" || fail "resumed at the epoch: other scores"

# From a checkpoint inside epoch 1 (200 samples: 7 rounds an epoch; iteration 10).
run m 2 output.checkpointEveryIterations=5 >/dev/null
for f in "$WORK"/m/checkpoints/*.dlck; do
  case "$f" in *-i10.dlck) ;; *) rm "$f" ;; esac
done
[ -n "$(ls "$WORK/m/checkpoints")" ] || fail "no checkpoint at iteration 10"
run m 2 --resume output.checkpointEveryIterations=5 >"$WORK/m.txt"
grep -q "resume: .*-i10.dlck" "$WORK/m.txt" || fail "did not resume at 10: $(grep resume "$WORK/m.txt")"
cmp "$WORK/a/scores.csv" "$WORK/m/scores.csv" || fail "resumed inside an epoch: other scores"
echo "ok: runs resumed at and inside an epoch repeat the straight run's scores.csv"

# predict and export apply the normalization the model was trained with.
"$DL_TRAIN" predict --model "$WORK/a/model.dlm" --input "$data/test_batch.bin" \
  --output "$WORK/a.csv" 2>/dev/null
if "$python" -c 'import onnx, numpy' 2>/dev/null &&
  "$DL_TRAIN" export --format onnx --model "$WORK/a/model.dlm" --output "$WORK/a.onnx" >"$WORK/export.txt" 2>&1; then
  "$python" "$DL_SOURCE_DIR/tests/cli/onnx_reference.py" "$WORK/a.onnx" "$data/test_batch.bin" \
    cifar10 "$WORK/a.csv" || fail "the exported normalized model does not match predict"
else
  echo "note: no ONNX check ($(head -1 "$WORK/export.txt" 2>/dev/null))"
fi

# A config without data.normalize for a model trained with it would feed it raw pixels: eval
# and predict refuse it (exit 4) instead of going on (they used to, at about chance accuracy).
sed 's/^  normalize: true$/  normalize: false/' "$WORK/a/config.resolved.yaml" >"$WORK/raw.yaml"
grep -q '^  normalize: false$' "$WORK/raw.yaml" || fail "the resolved config has no normalize line"
expect_failure 4 "the model was trained on normalized inputs but $WORK/raw.yaml sets" \
  "data.normalize: false" -- "$DL_TRAIN" eval --model "$WORK/a/model.dlm" --config "$WORK/raw.yaml"
expect_failure 4 "trained on normalized inputs" -- "$DL_TRAIN" predict --model "$WORK/a/model.dlm" \
  --config "$WORK/raw.yaml" --input "$data/test_batch.bin" --output "$WORK/raw.csv"
[ ! -e "$WORK/raw.csv" ] || fail "the refused predict wrote its output"

# The training set resident in the backend (gather_transformed does the pipeline there): the host
# loader's scores bit for bit.
run dev 2 data.deviceResident=always >"$WORK/dev.txt"
grep -q "^data: resident in backend memory" "$WORK/dev.txt" ||
  fail "not resident: $(grep '^data:' "$WORK/dev.txt")"
cmp "$WORK/a/scores.csv" "$WORK/dev/scores.csv" || fail "the resident path gave other scores"
echo "ok: deviceResident always (the pipeline on the backend) repeats the host loader's scores.csv"
expect_failure 2 "channelMean has 1 values but the data \(data.format cifar10\) has 3 channel" -- \
  "$DL_TRAIN" validate --config-only --config "$cfg" --set data.normalize=true --set "data.channelMean=[0.5]" \
  --set "data.channelStd=[0.2]"
expect_failure 2 "data.channelMean is given but data.normalize is false" -- \
  "$DL_TRAIN" validate --config-only --config "$cfg" --set "data.channelMean=[0.5, 0.5, 0.5]" \
  --set "data.channelStd=[0.2, 0.2, 0.2]"
