#!/usr/bin/env bash
# data.cacheBytes on image folders: a folder whose decoded images exceed it is streamed (each
# batch's images decoded ahead of the step, parallel.prefetchBuffer batches ahead) and trains bit
# for bit as the same folder held whole: scores.csv compared with cmp, the models with
# compare_models at tolerance 0, on other thread counts and prefetch depths, with a validation
# split, normalization computed from the data, crops and flips, two workers and a streamed test
# folder, also across 2 MPI ranks. A bad file in a streamed folder stops the run at start naming
# it (exit 3), before the run claims its directory; under onBadFile: skip it is left out as in a
# held folder. With a tiny cacheBytes the peak RSS
# of a run on 224x224 RGB JPEGs grows far less than their decoded size above the same run on 16 of
# them (below a quarter of it), and the held run's grows by more than half of it (the runs' other
# peaks need not coincide: about 13 MB here).
source "$(dirname "$0")/lib.sh"
: "${PYTHON3:?PYTHON3 must name python3 with Pillow}"
"$PYTHON3" -c "import PIL" 2>/dev/null || { echo "SKIP: python3-pil is not installed"; exit 77; }
fashion=/usr/share/datasets/fashion-mnist
[ -e "$fashion/train-images-idx3-ubyte.gz" ] || { echo "SKIP: no $fashion"; exit 77; }
make_folder() {  # make_folder OUT COUNT SPLIT ARGS...: SPLIT train or t10k of Fashion-MNIST
  local out=$1 count=$2 split=$3
  shift 3
  "$PYTHON3" "$DL_SOURCE_DIR/tests/tools/make_image_folder.py" \
    "$fashion/$split-images-idx3-ubyte.gz" "$fashion/$split-labels-idx1-ubyte.gz" "$out" \
    "$count" "$@"
}
make_folder "$WORK/folder/train" 1200 train --format mixed
make_folder "$WORK/folder/test" 300 t10k --format mixed

cfg="$DL_SOURCE_DIR/configs/fashion-mnist-folder.yaml"
# 1200 x 784 bytes = 940800 decoded: 1 GiB holds them; 50000 bytes holds 63 of them.
run() {  # run NAME CACHE_BYTES SETTINGS...
  local name=$1 cache=$2
  shift 2
  local sets=()
  for a in "$@"; do sets+=(--set "$a"); done
  "$DL_TRAIN" --config "$cfg" --set backend=cpu --set "data.trainDirectory=$WORK/folder/train" \
    --set "data.testDirectory=$WORK/folder/test" --set epochs=3 --set output.console=epochs \
    --set output.scoreEveryIterations=1 \
    --set output.report=false --set data.validationSplit=0.1 --set data.normalize=true \
    --set data.randomCrop=2 --set data.horizontalFlip=true --set parallel.workers=2 \
    --set "data.cacheBytes=$cache" --set "output.directory=$WORK/$name" "${sets[@]}" \
    >"$WORK/$name.txt" 2>&1 || fail "$name: $(tail -3 "$WORK/$name.txt")"
}
run held 1GiB parallel.blasThreads=2
run streamed 50000 parallel.blasThreads=1
run streamed-sync 50000 parallel.blasThreads=2 parallel.prefetchBuffer=0
grep -q "1200 images decoded before training" "$WORK/held.txt" ||
  fail "the held run's data line: $(grep '^data:' "$WORK/held.txt")"
grep -q "1200 images streamed: their 940800 decoded bytes exceed data.cacheBytes (50000 bytes)" \
  "$WORK/streamed.txt" || fail "the streamed run's data line: $(grep '^data:' "$WORK/streamed.txt")"
echo "ok: $(grep '^data: host' "$WORK/streamed.txt")"
grep -q "images in $WORK/folder/test: 300 images streamed" "$WORK/streamed.txt" ||
  fail "the streamed test folder is not named: $(grep '^data:' "$WORK/streamed.txt")"
"$DL_TRAIN" validate --config "$cfg" --set "data.trainDirectory=$WORK/folder/train" \
  --set "data.testDirectory=$WORK/folder/test" --set data.cacheBytes=50000 >"$WORK/validate.txt"
grep -q "images in $WORK/folder/train: 1200 images streamed" "$WORK/validate.txt" ||
  fail "validate does not say the folder is streamed: $(tail -4 "$WORK/validate.txt")"
for name in streamed streamed-sync; do
  cmp "$WORK/held/scores.csv" "$WORK/$name/scores.csv" ||
    fail "$name: scores.csv differs from the held folder's"
  "$COMPARE_MODELS" "$WORK/held/model.dlm" "$WORK/$name/model.dlm" 0 ||
    fail "$name: the model differs from the held folder's"
done
echo "ok: held (2 threads) and streamed (1 thread; 2 threads without prefetching) folders give" \
  "the same scores.csv ($(wc -l <"$WORK/held/scores.csv") lines) and the same model bits"

# Two MPI ranks (each decoding its own shard when streamed) train the same bits either way.
if [ "${MPI_BUILT:-0}" = 1 ] && command -v mpirun >/dev/null; then
  for name in held-mpi:1GiB streamed-mpi:50000; do
    "$MPIRUN_LOCAL" -np 2 "$DL_TRAIN" --config "$cfg" --set backend=cpu \
      --set "data.trainDirectory=$WORK/folder/train" --set "data.testDirectory=$WORK/folder/test" \
      --set epochs=2 --set output.console=epochs --set output.report=false \
      --set parallel.mode=synchronous --set data.randomCrop=2 --set "data.cacheBytes=${name#*:}" \
      --set "output.directory=$WORK/${name%%:*}" >"$WORK/${name%%:*}.txt" 2>&1 ||
      fail "${name%%:*}: $(tail -3 "$WORK/${name%%:*}.txt")"
  done
  grep -q "processes: MPI" "$WORK/streamed-mpi.txt" || fail "the ranks did not form one MPI group"
  cmp "$WORK/held-mpi/scores.csv" "$WORK/streamed-mpi/scores.csv" || fail "MPI: scores differ"
  "$COMPARE_MODELS" "$WORK/held-mpi/model.dlm" "$WORK/streamed-mpi/model.dlm" 0 ||
    fail "MPI: the streamed model differs"
  echo "ok: 2 MPI ranks train the same bits from the held and the streamed folder"
  # cacheBytes: auto is half this machine's memory split between its ranks, not half per rank.
  "$MPIRUN_LOCAL" -np 2 "$DL_TRAIN" --config "$cfg" --set backend=cpu \
    --set "data.trainDirectory=$WORK/folder/train" --set "data.testDirectory=$WORK/folder/test" \
    --set epochs=1 --set output.console=epochs --set output.report=false \
    --set "output.directory=$WORK/auto-mpi" >"$WORK/auto-mpi.txt" 2>&1 ||
    fail "auto-mpi: $(tail -3 "$WORK/auto-mpi.txt")"
  grep -Eq "^data: .*data\.cacheBytes: auto \([0-9]+ bytes, half the [0-9]+ bytes of .* split between the 2 processes of this run on this machine\)" \
    "$WORK/auto-mpi.txt" || fail "auto-mpi: the data line: $(grep '^data:' "$WORK/auto-mpi.txt")"
  echo "ok: $(grep -o 'data.cacheBytes: auto ([^)]*)' "$WORK/auto-mpi.txt" | head -1)"
else
  echo "note: no MPI here; the 2-rank comparison was not run"
fi

# A corrupt JPEG in a streamed folder stops the run at start, naming it, before the run claims
# its directory: validate finds it, a fresh start creates nothing, and --overwrite of an existing
# run leaves that run's files as they were (found mid-run, it had cost the old run); the same in
# the test folder, which was decoded only when the first epoch was evaluated.
cp -r "$WORK/folder" "$WORK/bad"
bad_file=$(ls "$WORK/bad/train/Coat/"*.jpg | head -1)
head -c 300 "$WORK/folder/train/Coat/$(basename "$bad_file")" >"$bad_file"
bad_sets=(--config "$cfg" --set backend=cpu --set "data.trainDirectory=$WORK/bad/train"
  --set "data.testDirectory=$WORK/bad/test" --set epochs=1 --set output.console=epochs
  --set output.report=false --set data.cacheBytes=50000)
expect_failure 3 "error: $bad_file: .*data.onBadFile: skip" -- \
  "$DL_TRAIN" "${bad_sets[@]}" --set "output.directory=$WORK/bad-stop"
[ ! -e "$WORK/bad-stop" ] || fail "a bad file in a streamed folder left $(ls -A "$WORK/bad-stop")"
expect_failure 3 "error: $bad_file: " -- "$DL_TRAIN" validate "${bad_sets[@]}"
"$DL_TRAIN" "${bad_sets[@]}" --set "data.trainDirectory=$WORK/folder/train" \
  --set "data.testDirectory=$WORK/folder/test" --set "output.directory=$WORK/kept" \
  >"$WORK/kept.txt" 2>&1 || fail "the run to keep: $(tail -3 "$WORK/kept.txt")"
run_files() { (cd "$1" && find . -type f ! -name .dl-train.lock -exec sha256sum {} + | sort); }
run_files "$WORK/kept" >"$WORK/kept.sums"
expect_failure 3 "error: $bad_file: " -- \
  "$DL_TRAIN" "${bad_sets[@]}" --set "output.directory=$WORK/kept" --overwrite
run_files "$WORK/kept" | diff "$WORK/kept.sums" - || fail "--overwrite with a bad file changed the old run"
bad_test=$(ls "$WORK/bad/test/Coat/"*.jpg | head -1)
head -c 300 "$WORK/folder/test/Coat/$(basename "$bad_test")" >"$bad_test"
expect_failure 3 "error: $bad_test: " -- \
  "$DL_TRAIN" "${bad_sets[@]}" --set "data.trainDirectory=$WORK/folder/train" \
  --set "output.directory=$WORK/bad-test"
[ ! -e "$WORK/bad-test" ] || fail "a bad test file in a streamed folder left $(ls -A "$WORK/bad-test")"
cp "$WORK/folder/test/Coat/$(basename "$bad_test")" "$bad_test"
echo "ok: a bad file in a streamed folder stops the run at start; --overwrite keeps the old run"
# Under skip the file is found before training (the samples must be known) and left out.
"$DL_TRAIN" "${bad_sets[@]}" --set data.onBadFile=skip --set "output.directory=$WORK/bad-skip" \
  >"$WORK/bad-skip.txt" 2>&1 || fail "skip: $(tail -3 "$WORK/bad-skip.txt")"
"$DL_TRAIN" "${bad_sets[@]}" --set data.onBadFile=skip --set data.cacheBytes=1GiB \
  --set "output.directory=$WORK/bad-held" >"$WORK/bad-held.txt" 2>&1 ||
  fail "skip, held: $(tail -3 "$WORK/bad-held.txt")"
grep -q "skipped $bad_file: " "$WORK/bad-skip.txt" || fail "skip: $(head -20 "$WORK/bad-skip.txt")"
cmp "$WORK/bad-held/scores.csv" "$WORK/bad-skip/scores.csv" ||
  fail "skip: streamed differs from held"
echo "ok: onBadFile: skip leaves the file out of a streamed folder as of a held one"

# Memory: 1000 RGB 256x256 JPEGs fitted to 224x224 are 1000 x 150528 = 150528000 decoded bytes.
make_folder "$WORK/rgb/train" 1000 train --format jpeg --size 256 --rgb
make_folder "$WORK/rgb/test" 20 t10k --format jpeg --size 256 --rgb
cat >"$WORK/rgb.yaml" <<'EOF'
seed: 7
updater: {type: sgd, learningRate: 0.01}
batchSize: 16
epochs: 1
inputType:
  convolutionalFlat: {height: 224, width: 224, channels: 3}
layers:
  - convolution: {kernelSize: [8, 8], stride: [8, 8], nOut: 4, activation: relu}
  - subsampling: {poolingType: max, kernelSize: [4, 4], stride: [4, 4]}
  - output: {nOut: 10, activation: softmax, lossFunction: negativeloglikelihood}
data: {format: imagefolder}
output: {console: epochs, report: false}
parallel: {prefetchBuffer: 1}
EOF
peak_kib() {  # peak_kib NAME CACHE_BYTES [ARGS]: the peak RSS in KiB of a run on the RGB folder
  local name=$1 cache=$2
  shift 2
  /usr/bin/time -v "$DL_TRAIN" --config "$WORK/rgb.yaml" --set backend=cpu \
    --set "data.trainDirectory=$WORK/rgb/train" --set "data.testDirectory=$WORK/rgb/test" \
    --set "data.cacheBytes=$cache" --set "output.directory=$WORK/$name" "$@" >"$WORK/$name.txt" \
    2>"$WORK/$name.time" || fail "$name: $(tail -3 "$WORK/$name.time")"
  sed -n 's/.*Maximum resident set size (kbytes): \([0-9]*\)/\1/p' "$WORK/$name.time"
}
# The same run on 16 of the images: the process, the model and its batches, what both grow from.
base_kib=$(peak_kib rgb-base 1GiB --set data.trainLimit=16)
held_kib=$(($(peak_kib rgb-held 1GiB) - base_kib))
streamed_kib=$(($(peak_kib rgb-streamed 4MiB) - base_kib))
cmp "$WORK/rgb-held/scores.csv" "$WORK/rgb-streamed/scores.csv" || fail "RGB: scores differ"
decoded_kib=$((150528000 / 1024))
echo "ok: peak RSS above a run on 16 images ($base_kib KiB) on 1000 224x224 RGB images" \
  "($decoded_kib KiB decoded): held +$held_kib KiB, streamed with data.cacheBytes 4MiB" \
  "+$streamed_kib KiB"
[ "$held_kib" -gt $((decoded_kib / 2)) ] || fail "the held run's RSS does not hold the images"
[ "$streamed_kib" -lt $((decoded_kib / 4)) ] ||
  fail "the streamed run's RSS grows by $streamed_kib KiB, not far below $decoded_kib KiB"
