#!/usr/bin/env bash
# Bad input gets one clear line naming the place and the fix, and the documented exit code.
source "$(dirname "$0")/lib.sh"
: "${MAKE_CIFAR:?MAKE_CIFAR must name the make_cifar_dataset tool}"
make_data "$WORK/data" 200 50
cfg="$DL_SOURCE_DIR/configs/lenet-small-test.yaml"

# Config errors: exit 2.
printf 'seed: 1\nbatchsize: 12\n' >"$WORK/typo.yaml"
expect_failure 2 'typo.yaml:2:1' "did you mean 'batchSize'" -- "$DL_TRAIN" validate --config-only --config "$WORK/typo.yaml"
expect_failure 2 "epochs" -- "$DL_TRAIN" validate --config-only --config "$cfg" --set epochs=-1
expect_failure 2 "did you mean" -- "$DL_TRAIN" validate --config-only --config "$cfg" --set updater.learningrate=0.1
# --config-only checks a config for another machine: a GPU it asks for need not be here (a login
# node's check of a GPU job was refused with exit 2).
for gpu in backend=cuda "backend=auto dtype=HALF" "backend=cuda dtype=BFLOAT16"; do
  sets=()
  for s in $gpu; do sets+=(--set "$s"); done
  "$DL_TRAIN" validate --config-only --config "$cfg" "${sets[@]}" >"$WORK/gpu-only.txt" 2>&1 ||
    fail "validate --config-only $gpu: $(tail -1 "$WORK/gpu-only.txt")"
done
expect_failure 2 "no-such.yaml" -- "$DL_TRAIN" --config "$WORK/no-such.yaml"
# Usage errors are one line too; report names what a path is instead of a run directory.
expect_failure 2 "--config is required" "--help" -- "$DL_TRAIN" train
# An option written before a command's name was parsed as the top level's and read by no command:
# validate printed epochs 1, eval evaluated the whole test set, both exiting 0.
expect_failure 2 "^dl-train: error: --set comes before the command 'validate', which reads only the options after its name; write it after 'validate'" -- \
  "$DL_TRAIN" --set epochs=7 validate --config-only --config "$cfg"
expect_failure 2 "^dl-train: error: --config comes before the command 'eval'" -- \
  "$DL_TRAIN" --config "$cfg" eval --model "$WORK/none.dlm"
# With the command's required --config only before its name, that is the error named (it said
# "--config is required", which the user had given).
expect_failure 2 "^dl-train: error: --config comes before the command 'validate', which reads only the options after its name" -- \
  "$DL_TRAIN" --config "$cfg" validate --config-only
expect_failure 2 "^dl-train: error: --resume comes before the command 'train'" -- \
  "$DL_TRAIN" --resume train --config "$cfg"
expect_failure 2 "^dl-train: error: --overwrite comes before the command 'inspect', which takes no --overwrite; leave it out" -- \
  "$DL_TRAIN" --overwrite inspect --model "$WORK/none.dlm"
mkfifo "$WORK/fifo"
expect_failure 2 "fifo: not a directory" "run directory" -- "$DL_TRAIN" report "$WORK/fifo"
expect_failure 2 "no-such-run: no such run directory" -- "$DL_TRAIN" report "$WORK/no-such-run"
printf 'layers: [\n' >"$WORK/syntax.yaml"
expect_failure 2 "syntax.yaml:" -- "$DL_TRAIN" validate --config-only --config "$WORK/syntax.yaml"

# Data errors: exit 3.
mapfile -t args < <(small_args "$WORK/nowhere" "$WORK/run1")
expect_failure 3 "nowhere/train-images-idx3-ubyte.gz" -- "$DL_TRAIN" "${args[@]}"
cp -r "$WORK/data" "$WORK/truncated"
gzip -dc "$WORK/data/train-images-idx3-ubyte.gz" >"$WORK/images.raw"
head -c 5000 "$WORK/images.raw" | gzip >"$WORK/truncated/train-images-idx3-ubyte.gz"
mapfile -t args < <(small_args "$WORK/truncated" "$WORK/run2")
expect_failure 3 "truncated/train-images-idx3-ubyte.gz" "truncat" -- "$DL_TRAIN" "${args[@]}"

# validate reads the data as training does: the same line and exit 3 for a missing file, a
# truncated one and images of another size than inputType; it claims no run directory.
# --config-only checks the config alone, for a config whose data is elsewhere.
mapfile -t args < <(small_args "$WORK/nowhere" "$WORK/v1")
training_line=$("$DL_TRAIN" "${args[@]}" 2>&1 >/dev/null) || true
expect_failure 3 "nowhere/train-images-idx3-ubyte.gz: cannot open" -- "$DL_TRAIN" validate "${args[@]}"
[ "$(cat "$WORK/err.txt")" = "$training_line" ] ||
  fail "validate and training differ: '$(cat "$WORK/err.txt")' vs '$training_line'"
"$DL_TRAIN" validate --config-only "${args[@]}" | grep -q "^data not checked (--config-only)$" ||
  fail "validate --config-only read the data"
mapfile -t args < <(small_args "$WORK/truncated" "$WORK/v2")
expect_failure 3 "truncated/train-images-idx3-ubyte.gz" "truncat" -- "$DL_TRAIN" validate "${args[@]}"
mapfile -t args < <(small_args "$WORK/data" "$WORK/v3" inputType.convolutionalFlat.height=27)
expect_failure 3 "images are 28x28 \(784 values\) but inputType expects 756 values" "fix inputType" -- \
  "$DL_TRAIN" validate "${args[@]}"
# The same 784 values in another shape would read every image scrambled: refused, shape named.
mapfile -t args < <(small_args "$WORK/data" "$WORK/v3" inputType.convolutionalFlat.height=14 \
  inputType.convolutionalFlat.width=56)
expect_failure 3 "images are 28x28 but inputType is convolutionalFlat 14x56x1 .*the same 784 values in another shape; set inputType's height: 28, width: 28, channels: 1 in " -- \
  "$DL_TRAIN" validate "${args[@]}"
[[ ! -e "$WORK/v1" && ! -e "$WORK/v2" && ! -e "$WORK/v3" ]] || fail "validate claimed a run directory"
mapfile -t args < <(small_args "$WORK/data" "$WORK/v4")
"$DL_TRAIN" validate "${args[@]}" | grep -q "^data OK: 200 training examples (28x28) from .*, 50 test examples" ||
  fail "validate on good data: $("$DL_TRAIN" validate "${args[@]}" | tail -2)"

# An existing run is not overwritten without --overwrite or --resume: exit 6.
mapfile -t args < <(small_args "$WORK/data" "$WORK/run3")
"$DL_TRAIN" "${args[@]}" >/dev/null
expect_failure 6 "already holds a run" "--resume" -- "$DL_TRAIN" "${args[@]}"
"$DL_TRAIN" "${args[@]}" --overwrite >/dev/null

# A diverging loss stops with the epoch and iteration: exit 5; the good checkpoint stays.
mapfile -t args < <(small_args "$WORK/data" "$WORK/run4" updater.learningRate=1e30 updater.type=sgd)
expect_failure 5 "epoch 1, iteration [0-9]+" "learningRate" -- "$DL_TRAIN" "${args[@]}"

# A batch no memory could hold is a config error before anything is allocated or claimed:
# exit 2 (it was std::bad_alloc inside the first step).
mapfile -t args < <(small_args "$WORK/data" "$WORK/run5" batchSize=2147483647)
expect_failure 2 "batchSize 2147483647 with 1 worker\(s\) needs at least" "lower batchSize" -- "$DL_TRAIN" "${args[@]}"
[[ ! -e "$WORK/run5" ]] || fail "the refused run claimed $WORK/run5"
expect_failure 2 "batchSize 2147483647 with 1 worker\(s\) needs at least" -- \
  "$DL_TRAIN" validate --config-only --config "$cfg" --set batchSize=2147483647
# A learning rate that is 0 in float32 is refused at validation, naming what it becomes.
expect_failure 2 "updater.learningRate = 1e-320 is out of range in float32" "it becomes 0" -- \
  "$DL_TRAIN" validate --config-only --config "$cfg" --set updater.learningRate=1e-320

# A corrupt model file: exit 4.
cp "$WORK/run3/model.dlm" "$WORK/corrupt.dlm"
printf '\xff' | dd of="$WORK/corrupt.dlm" bs=1 seek=100 conv=notrunc status=none
expect_failure 4 "corrupt.dlm" -- "$DL_TRAIN" eval --model "$WORK/corrupt.dlm" --config "$WORK/run3/config.resolved.yaml"
# An output that is one of the command's own inputs is refused before anything is written: exit
# 6, the input intact (predict -o over its model, eval --predictions over the config or a data
# file, export over the resolved config and report -o over a log each replaced the input).
model="$WORK/run3/model.dlm"
cp "$model" "$WORK/model-before.dlm"
expect_failure 6 "run3/model.dlm: --output names the file this command reads as --model" \
  "nothing was written: give --output another path" -- \
  "$DL_TRAIN" predict -m "$model" -i "$WORK/data/t10k-images-idx3-ubyte.gz" -o "$model"
expect_failure 6 "--output names the file this command reads as --input" -- "$DL_TRAIN" predict \
  -m "$model" -i "$WORK/data/t10k-images-idx3-ubyte.gz" -o "$WORK/data/t10k-images-idx3-ubyte.gz"
expect_failure 6 "--output names the file this command reads as --config" -- \
  "$DL_TRAIN" export --format onnx -m "$model" -o "$WORK/run3/config.resolved.yaml"
expect_failure 6 "--predictions names the file this command reads as the config's data file" -- \
  "$DL_TRAIN" eval -m "$model" --predictions "$WORK/data/t10k-labels-idx1-ubyte.gz"
# Nor a run's own file, which it does not read: predict -o RUN/scores.csv replaced the run's log.
cp "$WORK/run3/scores.csv" "$WORK/scores-before.csv"
expect_failure 6 "run3/scores.csv: --output names the run's own scores.csv in the run directory .*run3, so writing it would destroy that run's output; nothing was written" -- \
  "$DL_TRAIN" predict -m "$model" -i "$WORK/data/t10k-images-idx3-ubyte.gz" -o "$WORK/run3/scores.csv"
checkpoint=$(ls "$WORK/run3/checkpoints/"*.dlck | head -1)
expect_failure 6 "--predictions names the run's own checkpoint-e" -- \
  "$DL_TRAIN" eval -m "$model" --predictions "$checkpoint"
cmp -s "$WORK/run3/scores.csv" "$WORK/scores-before.csv" || fail "a refused output changed scores.csv"
# An input read through a link (a data file kept as a link to a shared copy) is refused as an
# output too: the rename replaced the link with the CSV, breaking the config's path.
ln -s "$WORK/data/t10k-labels-idx1-ubyte.gz" "$WORK/labels-link.gz"
expect_failure 6 "labels-link.gz: --predictions names the file this command reads as the config's data file" -- \
  "$DL_TRAIN" eval -m "$model" --set "data.testLabels=$WORK/labels-link.gz" --predictions "$WORK/labels-link.gz"
[ -L "$WORK/labels-link.gz" ] || fail "a refused output replaced the link to an input"
expect_failure 6 "--output names the file this command reads as a run's log" -- \
  "$DL_TRAIN" report "$WORK/run3" -o "$WORK/run3/scores.csv"
# report -o over a run's file it does not read (the model, a checkpoint, the marker) destroyed
# it with exit 0; the run's own report.html stays its to write.
for own in model.dlm "checkpoints/$(basename "$checkpoint")" .dl-train-run; do
  expect_failure 6 "--output names the run's own $(basename "$own") in the run directory" -- \
    "$DL_TRAIN" report "$WORK/run3" -o "$WORK/run3/$own"
done
"$DL_TRAIN" report "$WORK/run3" -o "$WORK/run3/report.html" >/dev/null || fail "report -o its own page"
cmp -s "$model" "$WORK/model-before.dlm" || fail "a refused output changed the model"
# A model whose weights are NaN (its checksums made valid again) is refused by the commands that
# compute with it: predict wrote class 0 beside NaN probabilities, exit 0.
"$PYTHON3" "$DL_SOURCE_DIR/tests/tools/edit_checkpoint.py" "$model" "$WORK/nan-model.dlm" nan-parameters ||
  fail "could not write the NaN model"
expect_failure 4 "nan-model.dlm: [0-9]+ of its [0-9]+ parameters are not finite" -- \
  "$DL_TRAIN" predict -m "$WORK/nan-model.dlm" -c "$WORK/run3/config.resolved.yaml" \
  -i "$WORK/data/t10k-images-idx3-ubyte.gz" -o "$WORK/nan-predictions.csv"
[ ! -e "$WORK/nan-predictions.csv" ] || fail "a NaN model's predictions were written"
head -1 "$WORK/run3/scores.csv" | grep -q "^epoch,iteration" || fail "report -o replaced scores.csv"
mapfile -t args < <(small_args "$WORK/data" "$WORK/v5")
"$DL_TRAIN" validate "${args[@]}" >/dev/null || fail "a refused output changed the data"
"$DL_TRAIN" validate --config "$WORK/run3/config.resolved.yaml" >/dev/null ||
  fail "a refused output changed the resolved config"
# An output that names a FIFO or a device is written into, never replaced by the rename (run as
# root, predict -o /dev/full turned the device into a regular file and exited 0); one nobody
# reads, or a directory, is refused: exit 6, the entry left as it was.
"$DL_TRAIN" predict -m "$model" -i "$WORK/data/t10k-images-idx3-ubyte.gz" \
  -o "$WORK/predictions.csv" 2>/dev/null || fail "predict into a regular file failed"
mkfifo "$WORK/predictions.fifo"
cat <"$WORK/predictions.fifo" >"$WORK/fifo-read.csv" &
reader=$!
timeout 60 "$DL_TRAIN" predict -m "$model" -i "$WORK/data/t10k-images-idx3-ubyte.gz" \
  -o "$WORK/predictions.fifo" 2>/dev/null || fail "predict into a FIFO with a reader failed"
# Checked before waiting: a FIFO replaced by a regular file is never opened for writing, so its
# reader would wait for ever.
[ -p "$WORK/predictions.fifo" ] || { kill "$reader"; fail "predict -o replaced the FIFO"; }
wait "$reader"
cmp -s "$WORK/predictions.csv" "$WORK/fifo-read.csv" ||
  fail "the FIFO's reader got $(wc -l <"$WORK/fifo-read.csv") lines, not predict's CSV"
expect_failure 6 "predictions.fifo: cannot write the file: it is a FIFO \(named pipe\) that no process is reading" \
  -- timeout 60 "$DL_TRAIN" predict -m "$model" -i "$WORK/data/t10k-images-idx3-ubyte.gz" \
  -o "$WORK/predictions.fifo"
[ -p "$WORK/predictions.fifo" ] || fail "the refused predict replaced the FIFO"
expect_failure 6 "data: cannot write the file: it is a directory; name a file in it" -- \
  "$DL_TRAIN" export --format onnx -m "$model" -o "$WORK/data"
# A file of another format given to predict without --input-format is read as the model's
# data.format; the refusal says so and names --input-format (a PNG given to an IDX model was
# refused as a damaged IDX file, naming no way to read it as an image).
printf '\211PNG\r\n\032\n' >"$WORK/digit.png"
expect_failure 3 "digit.png: not an IDX file" \
  "read as idx, the model's data.format; for another kind of file pass --input-format: idx, cifar10" \
  -- "$DL_TRAIN" predict -m "$model" -i "$WORK/digit.png" -o "$WORK/refused.csv"
[ ! -e "$WORK/refused.csv" ] || fail "the refused predict wrote $WORK/refused.csv"

# report reads a run directory as every input is read: a folder that holds no run's files is
# refused (it wrote an empty report.html into the data folder), and so is a FIFO or a device in
# a log's place (a FIFO blocked the report for ever).
expect_failure 2 "data: not a run directory: it holds none of the files a training run writes" \
  -- "$DL_TRAIN" report "$WORK/data"
[ ! -e "$WORK/data/report.html" ] || fail "report wrote into a folder that is no run"
mkdir "$WORK/fifo-run"
mkfifo "$WORK/fifo-run/scores.csv"
expect_failure 2 "fifo-run/scores.csv: is a FIFO \(named pipe\), not a regular file" \
  "give report the run directory" -- timeout 60 "$DL_TRAIN" report "$WORK/fifo-run"
cp -r "$WORK/run3" "$WORK/device-run"
ln -sf /dev/zero "$WORK/device-run/metrics.jsonl"
expect_failure 2 "metrics.jsonl: is a character device" -- "$DL_TRAIN" report "$WORK/device-run"

# Test images of another size than the training images: exit 3, with both ways out.
"$MAKE_IDX" "$WORK/data32" 200 50 32 32
mapfile -t args < <(small_args "$WORK/data" "$WORK/run6" \
  "data.testImages=$WORK/data32/t10k-images-idx3-ubyte.gz" \
  "data.testLabels=$WORK/data32/t10k-labels-idx1-ubyte.gz")
expect_failure 3 "data32/t10k-images-idx3-ubyte.gz: test images are 32x32 but training images " \
  "are 28x28; give test images of 28x28 \(data.testImages, data.testLabels in .*small-test.yaml\), " \
  "or train on 32x32 images and set inputType to match" -- "$DL_TRAIN" "${args[@]}"

# Labels beyond numClasses: the advice is the largest label + 1, so following it works.
"$MAKE_IDX" "$WORK/data14" 200 50 28 28 14
mapfile -t args < <(small_args "$WORK/data14" "$WORK/run7")
expect_failure 3 "train-labels-idx1-ubyte.gz: label 1[0-3] at index [0-9]+ \(counting from 0\) " \
  "is not below numClasses = 10, and the largest label is 13; " \
  "set data.numClasses to at least 14" -- "$DL_TRAIN" "${args[@]}"
mapfile -t args < <(small_args "$WORK/data14" "$WORK/run7" data.numClasses=14 layers.3.nOut=14)
"$DL_TRAIN" validate "${args[@]}" >/dev/null || fail "numClasses as advised still fails"

# CSV: a field quoted in a message is clipped, so the one line is not lost (a 10 MB field made a
# message standard error dropped, leaving "dl-train: " alone); a delimiter that is one of a
# number's characters or the quote, or is not ASCII, is a config error at its line.
mkdir -p "$WORK/csv"
for i in 1 2 3 4 5 6; do echo "0.$i,0.5,$((i % 2))"; done >"$WORK/csv/train.csv"
cp "$WORK/csv/train.csv" "$WORK/csv/test.csv"
printf 'backend: cpu\ninputType: {feedForward: {size: 2}}\nlayers:\n  - output: {nOut: 2}\n' \
  >"$WORK/csv.yaml"
printf 'data:\n  format: csv\n  numClasses: 2\n  delimiter: "."\n' >>"$WORK/csv.yaml"
csv_args=(--set "data.trainFile=$WORK/csv/train.csv" --set "data.testFile=$WORK/csv/test.csv")
expect_failure 2 "csv.yaml:8:14: data.delimiter is '\.', a character numbers or quoted fields" \
  "write delimiter" -- "$DL_TRAIN" validate --config "$WORK/csv.yaml" "${csv_args[@]}"
expect_failure 2 "data.delimiter is 'é' \(2 bytes\), but it must be one ASCII character" -- \
  "$DL_TRAIN" validate --config "$WORK/csv.yaml" "${csv_args[@]}" --set 'data.delimiter=é'
head -c 10000000 /dev/zero | tr '\0' 7 >>"$WORK/csv/train.csv"
echo ",0.5,1" >>"$WORK/csv/train.csv"
expect_failure 3 "train.csv: line 7: field 1 \('777+\.\.\.777+ \(10000000 bytes\)'\)" \
  "is beyond float32's range \(\+-3\.4e38\); scale the column; fix the row, or set data.onBadFile: skip" -- \
  "$DL_TRAIN" validate --config "$WORK/csv.yaml" "${csv_args[@]}" --set 'data.delimiter=","'

# A config with old Mac line ends (a carriage return alone) is refused at the first one, naming
# the fix (it read as one comment line: "the config is empty").
tr '\n' '\r' <"$cfg" >"$WORK/mac.yaml"
expect_failure 2 "mac.yaml:1:[0-9]+: a line ends with a carriage return alone" \
  "save the file with LF \(or CRLF\) line ends" -- \
  "$DL_TRAIN" validate --config-only --config "$WORK/mac.yaml"

# An output directory whose paths would pass PATH_MAX, or with a name past NAME_MAX, is refused
# before anything is read or written (it trained an epoch and failed at the first checkpoint).
deep="$WORK"
while [ ${#deep} -lt 4000 ]; do deep="$deep/$(printf 'd%.0s' {1..200})"; done
mkdir -p "$deep"
mapfile -t args < <(small_args "$WORK/data" "$deep/run")
expect_failure 6 "the output directory's path is [0-9]+ bytes long, so the longest path a run " \
  "writes in it \((checkpoints|tensorboard)/[^)]+\) would be [0-9]+ bytes, over the system's " \
  "limit of 4095 bytes \(PATH_MAX\); set output.directory to a path of at most [0-9]+ bytes" -- \
  "$DL_TRAIN" "${args[@]}"
[ ! -e "$deep/run" ] || fail "the refused run created its directory"
[ "$(wc -c <"$WORK/err.txt")" -lt 1000 ] || fail "the message quotes the whole path"
long_name=$(printf 'n%.0s' {1..256})
mapfile -t args < <(small_args "$WORK/data" "$WORK/$long_name/run")
expect_failure 6 "the output directory's part 'n+\.\.\.n+ \(256 bytes\)' is 256 bytes long, " \
  "over the file system's limit of 255 bytes for a name \(NAME_MAX\)" -- "$DL_TRAIN" "${args[@]}"

# The data generators of the tests make a missing output folder, and say why they cannot.
"$MAKE_CIFAR" "$WORK/new/cifar/folder" 20 10 || fail "make_cifar_dataset failed on a new folder"
[ -s "$WORK/new/cifar/folder/test_batch.bin" ] || fail "make_cifar_dataset wrote no test batch"
"$MAKE_IDX" "$WORK/new/idx/folder" 20 10 || fail "make_idx_dataset failed on a new folder"
[ -s "$WORK/new/idx/folder/t10k-labels-idx1-ubyte.gz" ] || fail "make_idx_dataset wrote no labels"
touch "$WORK/a-file"
expect_failure 1 "a-file/cifar: cannot create the folder: Not a directory" -- \
  "$MAKE_CIFAR" "$WORK/a-file/cifar" 20 10
expect_failure 1 "a-file/idx: cannot create the folder: Not a directory" -- \
  "$MAKE_IDX" "$WORK/a-file/idx" 20 10
# A network of which one sample alone outgrows memory: no batchSize helps, and the fix says so.
printf 'backend: cpu\nbatchSize: 1\ninputType: {convolutionalFlat: {height: 65536, width: 65536, channels: 4096}}\nlayers:\n  - globalPooling: {}\n  - output: {nOut: 10}\n' \
  >"$WORK/huge.yaml"
expect_failure 2 "batchSize 1 with 1 worker\(s\) needs at least .* one sample alone does not fit: shrink the network" -- \
  "$DL_TRAIN" validate --config "$WORK/huge.yaml" --set "data.trainImages=$WORK/data/train-images-idx3-ubyte.gz"
# Parameters no memory holds (two dense layers of 2^20 units: about 4 TiB with their gradients):
# refused at the config, naming the largest layer. validate said "config OK", and training ran
# out of memory with advice about batchSize and data.trainLimit.
printf 'backend: cpu\nbatchSize: 1\ninputType: {feedForward: {size: 784}}\nlayers:\n  - dense: {nOut: 1048576}\n  - dense: {nOut: 1048576}\n  - output: {nOut: 10}\n' \
  >"$WORK/giant.yaml"
mapfile -t args < <(small_args "$WORK/data" "$WORK/giant")
args[1]="$WORK/giant.yaml"
for command in validate train; do
  expect_failure 2 "the network's 1100346294282 parameters with 1 worker\(s\) need at least .* shrink the layers \(the largest: layers.1 'dense1', 1099512676352 parameters" -- \
    "$DL_TRAIN" "$command" "${args[@]}"
done
[ ! -e "$WORK/giant" ] || fail "a refused network left $(ls -A "$WORK/giant")"
echo "ok: all bad inputs rejected"
