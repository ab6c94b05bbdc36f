#!/usr/bin/env bash
# data.format: csv end to end, on CSV files generated from Fashion-MNIST (a header, the label
# first): configs/fashion-mnist-csv.yaml, and LeNet reading the rows as images, train to the
# accuracy of the same numbers read as IDX;
# predict reads a CSV; every bad row is one line naming the file and line, exit 3, nothing
# written; data.onBadFile: skip names the rows it left out.
source "$(dirname "$0")/lib.sh"
: "${PYTHON3:?PYTHON3 must name python3}"
fashion=/usr/share/datasets/fashion-mnist
[ -e "$fashion/train-images-idx3-ubyte.gz" ] || { echo "SKIP: no $fashion"; exit 77; }
make_csv="$DL_SOURCE_DIR/tests/tools/make_csv.py"
train_count=3000
test_count=1000
"$PYTHON3" "$make_csv" "$fashion/train-images-idx3-ubyte.gz" "$fashion/train-labels-idx1-ubyte.gz" \
  "$WORK/train.csv" "$train_count"
"$PYTHON3" "$make_csv" "$fashion/t10k-images-idx3-ubyte.gz" "$fashion/t10k-labels-idx1-ubyte.gz" \
  "$WORK/test.csv" "$test_count"
cfg="$DL_SOURCE_DIR/configs/fashion-mnist-csv.yaml"
epochs=3
csv_run() {
  local train=$1
  shift
  "$DL_TRAIN" --config "$cfg" --set backend=cpu --set "data.trainFile=$train" \
    --set "data.testFile=$WORK/test.csv" --set epochs=$epochs "$@"
}

"$DL_TRAIN" validate --config "$cfg" --set "data.trainFile=$WORK/train.csv" \
  --set "data.testFile=$WORK/test.csv" | grep -q "data OK: $train_count training examples (784 features)" ||
  fail "validate does not read the CSV files"
csv_run "$WORK/train.csv" --set "output.directory=$WORK/run-csv" --set output.console=epochs \
  >"$WORK/csv.txt"
# The same network on the same images as IDX (the CSV holds them as byte/255 to 3 decimals).
sed -e '/^data:/,/^$/d' "$cfg" >"$WORK/idx.yaml"
cat >>"$WORK/idx.yaml" <<YAML
data:
  trainImages: $fashion/train-images-idx3-ubyte.gz
  trainLabels: $fashion/train-labels-idx1-ubyte.gz
  testImages: $fashion/t10k-images-idx3-ubyte.gz
  testLabels: $fashion/t10k-labels-idx1-ubyte.gz
  trainLimit: $train_count
  testLimit: $test_count
YAML
"$DL_TRAIN" --config "$WORK/idx.yaml" --set backend=cpu --set epochs=$epochs \
  --set "output.directory=$WORK/run-idx" --set output.console=epochs >"$WORK/idx.txt"
accuracy() { sed -n 's/.*"test_accuracy": \([0-9.]*\).*/\1/p' "$1/summary.json"; }
# close_to_idx WHAT CSV_ACCURACY IDX_ACCURACY: the CSV run learned (0.6 and up) and is within 0.02
# of the same network on the same images read as IDX.
close_to_idx() {
  awk -v a="$2" -v b="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a >= 0.6 && d <= 0.02) }' ||
    fail "$1: accuracy $2 from CSV is not close to $3 from IDX"
}
csv_accuracy=$(accuracy "$WORK/run-csv")
idx_accuracy=$(accuracy "$WORK/run-idx")
echo "ok: $epochs epochs on $train_count rows: test accuracy $csv_accuracy from CSV, $idx_accuracy from IDX"
close_to_idx "configs/fashion-mnist-csv.yaml" "$csv_accuracy" "$idx_accuracy"

"$DL_TRAIN" predict -m "$WORK/run-csv/model.dlm" -i "$WORK/test.csv" -o "$WORK/predict.csv" \
  2>"$WORK/predict.err"
[ "$(wc -l <"$WORK/predict.csv")" -eq $((test_count + 1)) ] || fail "predict wrote $(wc -l <"$WORK/predict.csv") lines"
grep -q "accuracy $csv_accuracy" "$WORK/predict.err" || fail "predict: $(cat "$WORK/predict.err")"
grep -q "^predict: $test_count samples from $WORK/test.csv (" "$WORK/predict.err" ||
  fail "predict counts rows as samples, not images: $(cat "$WORK/predict.err")"
echo "ok: predict on the test CSV: $(cat "$WORK/predict.err")"

# Bad rows: exit 3, one line naming the file and line, nothing written.
bad() {  # bad NAME LINE_NUMBER REPLACEMENT: train.csv with that line replaced
  awk -v n="$2" -v r="$3" 'NR == n { print r; next } { print }' "$WORK/train.csv" >"$WORK/$1.csv"
}
nothing_written() { [ ! -e "$WORK/bad-run" ] || fail "a failed run wrote $WORK/bad-run"; }
bad short 5 "3,0.5,0.25"
expect_failure 3 "short.csv: line 5: 3 fields, but inputType's feedForward size 784 and the label make 785" \
  "onBadFile: skip" -- csv_run "$WORK/short.csv" --set "output.directory=$WORK/bad-run"
row=$(sed -n 7p "$WORK/train.csv")
bad word 7 "${row/,0.000,/,abc,}"
expect_failure 3 "word.csv: line 7: field [0-9]+ \('abc'\) is not a finite number" -- \
  csv_run "$WORK/word.csv" --set "output.directory=$WORK/bad-run"
bad label 9 "12${row#[0-9]}"
expect_failure 3 "label.csv: line 9: the label \(field 1\) is 12, not a class index from 0 to 9" -- \
  csv_run "$WORK/label.csv" --set "output.directory=$WORK/bad-run"
expect_failure 3 "no_such.csv: cannot open" -- csv_run "$WORK/no_such.csv" --set "output.directory=$WORK/bad-run"
nothing_written

# A convolutional network reads the rows as images (Kaggle's MNIST CSV: the label, then the
# pixels): configs/fashion-mnist.yaml's LeNet on the CSV rows reaches its accuracy on the same
# images read as IDX.
lenet="$DL_SOURCE_DIR/configs/fashion-mnist.yaml"
lenet_run() {  # lenet_run DIRECTORY --set ...: LeNet for $epochs epochs, batch 64
  local dir=$1
  shift
  "$DL_TRAIN" --config "$lenet" --set backend=cpu --set epochs=$epochs --set batchSize=64 \
    --set "output.directory=$dir" --set output.console=epochs "$@" >"$dir.txt"
}
lenet_run "$WORK/lenet-csv" --set "data={format: csv, trainFile: $WORK/train.csv, \
testFile: $WORK/test.csv, skipLines: 1, labelIndex: 0}"
lenet_run "$WORK/lenet-idx" --set data.trainLimit=$train_count --set data.testLimit=$test_count
lenet_csv=$(accuracy "$WORK/lenet-csv")
lenet_idx=$(accuracy "$WORK/lenet-idx")
echo "ok: LeNet (convolutionalFlat 28x28x1): test accuracy $lenet_csv from CSV, $lenet_idx from IDX"
close_to_idx LeNet "$lenet_csv" "$lenet_idx"
"$DL_TRAIN" predict -m "$WORK/lenet-csv/model.dlm" -i "$WORK/test.csv" -o "$WORK/lenet.csv" \
  2>"$WORK/lenet-predict.err"
grep -q "accuracy $lenet_csv" "$WORK/lenet-predict.err" || fail "predict: $(cat "$WORK/lenet-predict.err")"
# Images of another size than the file's rows: the first row names the count to give.
expect_failure 3 "train.csv: line 2: 785 fields, but inputType's convolutionalFlat 28x27x1 \(756 values\)" \
  "the file's rows hold 784 values besides the label where the config asks for 756" -- \
  csv_run "$WORK/train.csv" --set "output.directory=$WORK/bad-run" \
  --set "inputType={convolutionalFlat: {height: 28, width: 27, channels: 1}}"
# Crops and flips move an image's pixels; CSV rows are numbers.
expect_failure 2 "data.format csv holds rows of numbers, and random crops and flips are made on the pixels of image formats" -- \
  "$DL_TRAIN" validate --config-only --config "$cfg" --set data.randomCrop=2 \
  --set "inputType={convolutionalFlat: {height: 28, width: 28, channels: 1}}"
nothing_written
expect_failure 2 "data.delimiter is ';;' \(2 bytes\), but it must be one ASCII character" -- \
  "$DL_TRAIN" validate --config-only --config "$cfg" --set "data.delimiter=;;"

# onBadFile: skip leaves the rows out, counts and names them.
csv_run "$WORK/short.csv" --set data.onBadFile=skip --set "output.directory=$WORK/skip" \
  --set output.console=epochs >"$WORK/skip.txt"
grep -q "data: skipped 1 in $WORK/short.csv (data.onBadFile: skip)" "$WORK/skip.txt" || fail "skip: $(head -4 "$WORK/skip.txt")"
grep -q "data:   skipped $WORK/short.csv: line 5: 3 fields" "$WORK/skip.txt" || fail "skip: $(head -4 "$WORK/skip.txt")"
grep -q "data: $((train_count - 1)) training" "$WORK/skip.txt" || fail "skip: $(head -2 "$WORK/skip.txt")"
echo "ok: onBadFile: skip left out line 5"
# predict under onBadFile: skip names the rows it left out (their rows are missing, the index
# counts the rows read): it said "2999 images" alone.
"$DL_TRAIN" predict -m "$WORK/skip/model.dlm" -i "$WORK/short.csv" -o "$WORK/skip-predict.csv" \
  2>"$WORK/skip-predict.err"
grep -q "^predict: skipped 1 in $WORK/short.csv (data.onBadFile: skip)" "$WORK/skip-predict.err" &&
  grep -q "^predict:   skipped $WORK/short.csv: line 5: 3 fields" "$WORK/skip-predict.err" ||
  fail "predict: $(cat "$WORK/skip-predict.err")"
[ "$(wc -l <"$WORK/skip-predict.csv")" -eq "$train_count" ] || fail "predict wrote $(wc -l <"$WORK/skip-predict.csv") lines"
# Each row names its line, so the rows after the one left out still match theirs: index 3 is
# line 6 (the header is line 1, line 5 was left out).
head -1 "$WORK/skip-predict.csv" | grep -q "^index,line,predicted," || fail "predict header: $(head -1 "$WORK/skip-predict.csv")"
sed -n 5p "$WORK/skip-predict.csv" | grep -q "^3,6," || fail "row 3: $(sed -n 5p "$WORK/skip-predict.csv" | cut -c1-40)"
echo "ok: predict under onBadFile: skip names the row it left out"

# Steps skipped as non-finite (onNonFiniteLoss: skip; three rows of 3e38 make their batches'
# loss overflow) are counted over the whole run across a resume: the count travels in the
# checkpoint (a resumed run counted only its own).
awk -F, 'NR == 1 || NR > 1001 {print; next} NR == 2 || NR == 101 || NR == 201 {$2 = "3e38"} 1' OFS=, \
  <(head -n 1001 "$WORK/train.csv") >"$WORK/train-overflow.csv"
overflow=(--set onNonFiniteLoss=skip --set epochs=2 --set output.console=quiet --set l2=0 --set l2Bias=0)
csv_run "$WORK/train-overflow.csv" "${overflow[@]}" --set "output.directory=$WORK/skip-whole" \
  2>"$WORK/skip-whole.err" >/dev/null || fail "skipping steps: $(tail -2 "$WORK/skip-whole.err")"
csv_run "$WORK/train-overflow.csv" "${overflow[@]}" --set epochs=1 \
  --set "output.directory=$WORK/skip-resumed" >/dev/null 2>&1 || fail "the first epoch failed"
csv_run "$WORK/train-overflow.csv" "${overflow[@]}" --set "output.directory=$WORK/skip-resumed" \
  --resume >/dev/null 2>&1 || fail "the resumed epoch failed"
whole=$(grep -o '"skipped_non_finite_steps": [0-9]*' "$WORK/skip-whole/summary.json" | head -1)
resumed=$(grep -o '"skipped_non_finite_steps": [0-9]*' "$WORK/skip-resumed/summary.json" | head -1)
[ "$whole" != '"skipped_non_finite_steps": 0' ] || fail "no step was skipped: $whole"
[ "$whole" = "$resumed" ] || fail "skipped steps: $whole uninterrupted, $resumed resumed"
cmp -s "$WORK/skip-whole/scores.csv" "$WORK/skip-resumed/scores.csv" || fail "skipping: scores differ"
echo "ok: steps skipped as non-finite counted across a resume ($whole)"
