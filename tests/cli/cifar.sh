#!/usr/bin/env bash
# CIFAR end to end on generated colour data in the official binary layout (there is no CIFAR-10
# here): configs/cifar10.yaml validates with Keras's 282,250 parameters; each reader fault is one
# line naming the file, the record and the fix, exit 3; a 3-channel network trains on the CPU
# well above chance; a validation batch file; a CIFAR-100 directory trains on its coarse labels.
source "$(dirname "$0")/lib.sh"
: "${MAKE_CIFAR:?MAKE_CIFAR must name the make_cifar_dataset tool}"
cfg="$DL_SOURCE_DIR/configs/cifar10.yaml"
# The CPU, pinned: the same results, and no note about GPUs on stderr, on any machine.
cpu=(--set backend=cpu)
data="$WORK/cifar-10-batches-bin"
mkdir -p "$data"
"$MAKE_CIFAR" "$data" 600 200

"$DL_TRAIN" validate --config "$cfg" --set "data.directory=$data" >"$WORK/validate.txt"
grep -q "total parameters: 282250" "$WORK/validate.txt" || fail "cifar10.yaml: $(tail -3 "$WORK/validate.txt")"
grep -q "data OK: 600 training examples (3x32x32)" "$WORK/validate.txt" ||
  fail "validate did not check the data: $(tail -2 "$WORK/validate.txt")"
echo "ok: $(grep 'total parameters' "$WORK/validate.txt")"
# The shipped config, its data absent here: --config-only checks the config alone.
"$DL_TRAIN" validate --config-only --config "$cfg" | grep -q "total parameters: 282250" ||
  fail "validate --config-only on cifar10.yaml"

# Reader faults: exit 3, one line each.
run() {
  local dir=$1 out=$2
  shift 2
  "$DL_TRAIN" --config "$cfg" "${cpu[@]}" --set "data.directory=$dir" \
    --set "output.directory=$WORK/$out" --set epochs=1 "$@"
}
broken() { rm -rf "$WORK/$1" && cp -r "$data" "$WORK/$1"; }
broken missing && rm "$WORK/missing/data_batch_4.bin"
expect_failure 3 "missing/data_batch_4.bin: missing" "scripts/fetch_cifar10.sh" -- run "$WORK/missing" r1
broken cut && head -c 10000 "$data/test_batch.bin" >"$WORK/cut/test_batch.bin"
expect_failure 3 "cut/test_batch.bin: truncated: 10000 bytes" "inside record 3 \(counting from 0\) after 781 of its 3073 bytes" -- run "$WORK/cut" r2
# validate reads the data as training does: the same line, the same exit code.
expect_failure 3 "cut/test_batch.bin: truncated: 10000 bytes" -- \
  "$DL_TRAIN" validate --config "$cfg" --set "data.directory=$WORK/cut"
broken label && printf '\x0c' | dd of="$WORK/label/data_batch_2.bin" bs=1 seek=$((5 * 3073)) conv=notrunc status=none
expect_failure 3 "label/data_batch_2.bin: record 5 \(counting from 0, at byte 15365\) has the label 12, but CIFAR-10 labels are 0 to 9" -- run "$WORK/label" r3
expect_failure 3 "data.format cifar100 reads train.bin and test.bin" "set data.format: cifar10" -- \
  run "$data" r4 --set data.format=cifar100 --set data.numClasses=100
mkdir -p "$WORK/nested" && cp -r "$data" "$WORK/nested/"
expect_failure 3 "set data.directory: .*nested/cifar-10-batches-bin" -- run "$WORK/nested" r5
expect_failure 2 "set data.numClasses: 10" -- "$DL_TRAIN" validate --config-only --config "$cfg" --set data.numClasses=100

# A 3-channel network (the Keras network, narrowed to stay quick) trains on the CPU.
"$DL_TRAIN" --config "$cfg" "${cpu[@]}" --set "data.directory=$data" --set "output.directory=$WORK/train" \
  --set epochs=2 --set layers.0.nOut=8 --set layers.2.nOut=16 --set layers.4.nOut=32 \
  >"$WORK/train.txt"
grep -q "data: 600 training and 200 test examples (3x32x32), 10 classes" "$WORK/train.txt" ||
  fail "no 3x32x32 data line: $(head -5 "$WORK/train.txt")"
accuracy=$(sed -n 's/.*"test_accuracy": \([0-9.]*\).*/\1/p' "$WORK/train/summary.json")
echo "ok: 3x32x32 generated colour data, 2 epochs: test accuracy $accuracy"
awk -v a="$accuracy" 'BEGIN { exit !(a >= 0.5) }' || fail "accuracy $accuracy is near chance (0.1)"

# A CIFAR validation batch file (the seed's validation_data is the test batch): a bare name is
# read in data.directory; each epoch reports val_*; the reader's checks apply to it.
run "$data" valfile --set data.validationFile=test_batch.bin --set layers.0.nOut=4 \
  --set layers.2.nOut=4 --set layers.4.nOut=8 >"$WORK/valfile.txt"
grep -q "validation: 200 examples from $data/test_batch.bin" "$WORK/valfile.txt" ||
  fail "validationFile: $(grep -i valid "$WORK/valfile.txt")"
grep -q '"val_accuracy"' "$WORK/valfile/metrics.jsonl" || fail "no val_accuracy in metrics.jsonl"
echo "ok: $(grep '^validation:' "$WORK/valfile.txt")"
head -c 10000 "$data/test_batch.bin" >"$WORK/val_cut.bin"
expect_failure 3 "val_cut.bin: truncated: 10000 bytes" -- \
  run "$data" r6 --set "data.validationFile=$WORK/val_cut.bin"
expect_failure 3 "no_such.bin: missing; data.validationFile names one CIFAR-10 batch file" -- \
  run "$data" r7 --set data.validationFile=no_such.bin
expect_failure 2 "data.validationSplit and data.validationFile both name a validation set" -- \
  "$DL_TRAIN" validate --config-only --config "$cfg" --set data.validationFile=test_batch.bin \
  --set data.validationSplit=0.1
# A key of another format (the data format registry): named with the formats that have it.
expect_failure 2 "data.validationFile is a key of data.format cifar10, cifar100, not of idx" \
  "set data.format: cifar10, or remove validationFile" -- \
  "$DL_TRAIN" validate --config-only --config "$DL_SOURCE_DIR/configs/mnist.yaml" \
  --set data.validationFile=test_batch.bin

# CIFAR-100 with its 20 coarse labels.
hundred="$WORK/cifar-100-binary"
mkdir -p "$hundred"
"$MAKE_CIFAR" "$hundred" 100 20 cifar100
"$DL_TRAIN" --config "$cfg" "${cpu[@]}" --set "data.directory=$hundred" --set data.format=cifar100 \
  --set data.cifar100Labels=coarse --set data.numClasses=20 --set layers.5.nOut=20 \
  --set "output.directory=$WORK/coarse" --set epochs=1 --set layers.0.nOut=4 \
  --set layers.2.nOut=4 --set layers.4.nOut=8 >"$WORK/coarse.txt"
grep -q "100 training and 20 test examples (3x32x32), 20 classes" "$WORK/coarse.txt" ||
  fail "CIFAR-100 coarse: $(head -5 "$WORK/coarse.txt")"
echo "ok: CIFAR-100 coarse labels"
