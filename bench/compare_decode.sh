#!/usr/bin/env bash
# Image folder decoding, dl-train against torchvision's ImageFolder + DataLoader with as many
# loader processes as dl-train has decoding threads (the cores): decoded-and-fitted images/s on
# folders generated from Fashion-MNIST (tests/tools/make_image_folder.py): N 32x32 PNGs, N 32x32
# JPEGs (gray), and N/10 (or JPEG256_COUNT) RGB JPEGs of 256x256 fitted to 224x224 (where
# TurboJPEG's scaled decoding applies; 20,000 of them are 3.0 GB decoded). validate reads each
# folder with data.cacheBytes 1TiB, so that it decodes the folder whole as a held folder's run
# does, whatever the machine's memory (a folder beyond data.cacheBytes would be streamed, and
# validate would decode nothing: bench/compare_stream.sh measures streaming). dl-train's time is
# `validate` reading the folder as training does, less the time of `validate --config-only`
# (start-up and config); its test folder is 40 images, read too. Each pair runs RUNS times,
# alternating; the table has the best of each.
#
# Usage: [JPEG256_COUNT=M] bench/compare_decode.sh [N] [RUNS]   (default 20000 images, 3 runs);
# needs a built build/dl-train, python3-pil and python3-torchvision.
set -euo pipefail
count=${1:-20000}
runs=${2:-3}
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dl_train="$repo/build/dl-train"
python=/usr/bin/python3
fashion=/usr/share/datasets/fashion-mnist
cores=$(nproc)
work=$(mktemp -d "${TMPDIR:-/tmp}/dl-train-decode.XXXXXX")
trap 'rm -rf "$work"' EXIT

make_folder() {  # make_folder NAME COUNT ARGS...
  local name=$1 n=$2
  shift 2
  "$python" "$repo/tests/tools/make_image_folder.py" "$fashion/train-images-idx3-ubyte.gz" \
    "$fashion/train-labels-idx1-ubyte.gz" "$work/$name" "$n" "$@"
  # The test folder validate also reads: one image per class.
  "$python" "$repo/tests/tools/make_image_folder.py" "$fashion/t10k-images-idx3-ubyte.gz" \
    "$fashion/t10k-labels-idx1-ubyte.gz" "$work/$name-test" 40 "$@"
}
echo "generating folders in $work ..." >&2
make_folder png32 "$count" --size 32 --format png
make_folder jpeg32 "$count" --size 32 --format jpeg
make_folder jpeg256 "${JPEG256_COUNT:-$((count / 10))}" --size 256 --format jpeg --rgb

validate() {  # validate NAME SIDE CHANNELS [--config-only]: its wall-clock seconds
  local start end
  start=$(date +%s.%N)
  "$dl_train" validate ${4:+"$4"} --config "$repo/configs/fashion-mnist-folder.yaml" \
    --set backend=cpu --set "data.trainDirectory=$work/$1" --set "data.testDirectory=$work/$1-test" \
    --set data.cacheBytes=1TiB \
    --set "inputType.convolutionalFlat={height: $2, width: $2, channels: $3}" >/dev/null
  end=$(date +%s.%N)
  echo "$end - $start" | bc -l
}
# The folders' reading alone: validate less validate --config-only (start-up, config, layers).
dl_train_seconds() {
  echo "$(validate "$@") - $(validate "$@" --config-only)" | bc -l
}

printf '| folder | images | dl-train images/s | PyTorch images/s (%d workers) | ratio |\n' "$cores"
printf '| --- | --- | --- | --- | --- |\n'
for spec in "png32 32 1" "jpeg32 32 1" "jpeg256 224 3"; do
  read -r name side channels <<<"$spec"
  n=$(find "$work/$name" -type f | wc -l)
  best_ours=0
  best_torch=0
  for _ in $(seq 1 "$runs"); do
    s=$(dl_train_seconds "$name" "$side" "$channels")
    ours=$(echo "$n / $s" | bc -l)
    read -r images t < <("$python" "$repo/bench/pytorch_imagefolder.py" "$work/$name" "$side" \
      "$channels" "$cores")
    torch=$(echo "$images / $t" | bc -l)
    best_ours=$(echo "if ($ours > $best_ours) $ours else $best_ours" | bc -l)
    best_torch=$(echo "if ($torch > $best_torch) $torch else $best_torch" | bc -l)
  done
  printf '| %s (%s -> %s) | %d | %.0f | %.0f | %.2fx |\n' "$name" \
    "$([ "$name" = jpeg256 ] && echo 256 || echo 32)" "$side" "$n" "$best_ours" "$best_torch" \
    "$(echo "$best_ours / $best_torch" | bc -l)"
done
