#!/usr/bin/env bash
# Does decoding ahead keep training fed? An image folder of N RGB 256x256 JPEGs (from
# Fashion-MNIST, tests/tools/make_image_folder.py) fitted to 224x224 (150528 bytes each decoded:
# 20,000 are 3.0 GB), trained once held (data.cacheBytes large: decoded whole before the first
# step) and once streamed (data.cacheBytes CACHE, far below the folder: each batch decoded ahead
# by the worker's loader, parallel.prefetchBuffer batches ahead), by two networks:
#   - fast: one 8x8 stride-8 convolution, a pooling and the output layer, so cheap that training
#     outruns decoding: streamed images/s is then what the decode threads deliver;
#   - resnet20: configs/resnet20-cifar10.yaml's network at 224x224 (batch 8: its activations at
#     224x224 take 49x CIFAR's), on the first RESNET_N images: the step outlasts a batch's decoding.
# Each row: wall seconds of the whole run (start-up, any decoding before training, training,
# the test set of 40 images), training seconds and images/s (summary.json), peak RSS. The two
# runs of a network give the same scores.csv (checked: cmp).
#
# Usage: bench/compare_stream.sh [N] [RESNET_N] [CACHE] [EPOCHS]
#   (defaults 20000, 256, 64MiB, 1); needs a built build/dl-train and python3-pil.
set -euo pipefail
count=${1:-20000}
resnet_count=${2:-256}
cache=${3:-64MiB}
epochs=${4:-1}
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dl_train="$repo/build/dl-train"
python=/usr/bin/python3
fashion=/usr/share/datasets/fashion-mnist
work=$(mktemp -d "${TMPDIR:-/tmp}/dl-train-stream.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "generating $count 256x256 RGB JPEGs in $work ..." >&2
"$python" "$repo/tests/tools/make_image_folder.py" "$fashion/train-images-idx3-ubyte.gz" \
  "$fashion/train-labels-idx1-ubyte.gz" "$work/train" "$count" --size 256 --format jpeg --rgb
"$python" "$repo/tests/tools/make_image_folder.py" "$fashion/t10k-images-idx3-ubyte.gz" \
  "$fashion/t10k-labels-idx1-ubyte.gz" "$work/test" 40 --size 256 --format jpeg --rgb

cat >"$work/fast.yaml" <<'EOF'
seed: 7
updater: {type: sgd, learningRate: 0.01}
batchSize: 64
inputType:
  convolutionalFlat: {height: 224, width: 224, channels: 3}
layers:
  - convolution: {kernelSize: [8, 8], stride: [8, 8], nOut: 8, activation: relu}
  - subsampling: {poolingType: max, kernelSize: [4, 4], stride: [4, 4]}
  - output: {nOut: 10, activation: softmax, lossFunction: negativeloglikelihood}
data: {format: imagefolder, numClasses: 10}
parallel: {prefetchBuffer: 4}
EOF
# ResNet-20's layers (everything above its data section), on the image folder.
{
  sed '/^data:/,$d' "$repo/configs/resnet20-cifar10.yaml" |
    sed 's/convolutionalFlat: {height: 32, width: 32, channels: 3}/convolutionalFlat: {height: 224, width: 224, channels: 3}/; s/^batchSize: 128/batchSize: 8/'
  echo "data: {format: imagefolder, numClasses: 10, horizontalFlip: true}"
  echo "parallel: {mode: synchronous, workers: 1, prefetchBuffer: 4}"
} >"$work/resnet20.yaml"

summary() {  # summary RUN KEY
  sed -n "s/.*\"$2\": \\([0-9.e+-]*\\).*/\\1/p" "$work/$1/summary.json"
}
run() {  # run NETWORK HOLDING CACHE_BYTES LIMIT
  local name="$1-$2" start end
  start=$(date +%s.%N)
  "$dl_train" --config "$work/$1.yaml" --set backend=cpu --set "data.trainDirectory=$work/train" \
    --set "data.testDirectory=$work/test" --set "data.cacheBytes=$3" --set "data.trainLimit=$4" \
    --set "epochs=$epochs" --set output.console=epochs --set output.report=false \
    --set "output.directory=$work/$name" >"$work/$name.log" 2>&1 ||
    { tail -5 "$work/$name.log" >&2; exit 1; }
  end=$(date +%s.%N)
  printf '| %s | %s | %d | %.1f | %.1f | %.1f | %.0f |\n' "$1" "$2" "$4" \
    "$(echo "$end - $start" | bc -l)" "$(summary "$name" train_seconds)" \
    "$(summary "$name" train_images_per_second)" \
    "$(echo "$(summary "$name" peak_rss_bytes) / 1048576" | bc -l)"
}

echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "folder: $count images, $((count * 150528)) bytes decoded; streamed runs: data.cacheBytes $cache; $epochs epoch(s)"
echo
echo '| network | folder | images | wall s | train s | train images/s | peak RSS MiB |'
echo '| --- | --- | --- | --- | --- | --- | --- |'
for network in fast resnet20; do
  limit=$([ "$network" = fast ] && echo "$count" || echo "$resnet_count")
  run "$network" held 1TiB "$limit"
  run "$network" streamed "$cache" "$limit"
  cmp -s "$work/$network-held/scores.csv" "$work/$network-streamed/scores.csv" ||
    echo "MISMATCH: $network's scores.csv differ between held and streamed" >&2
done
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
