#!/usr/bin/env bash
# ResNet-20 (configs/resnet20-cifar10.yaml) on the CPU against its PyTorch peer
# (bench/pytorch_resnet.py): the same network, recipe, batch 128 and CIFAR-format data, one
# epoch per run, runs alternating (dl-train, PyTorch NCHW, PyTorch channels-last, dl-train, ...)
# so that a change in the machine's load hits all alike. Per side: training images/s (median of
# the runs), peak RSS (median, from /usr/bin/time), test accuracy after the epoch; the ratios are
# median against median, against PyTorch's faster layout.
#
# Usage: bench/compare_resnet20.sh [runs=3] [DATA_DIR]
#   DATA_DIR: a cifar-10-batches-bin folder; without one, Fashion-MNIST from
#   /usr/share/datasets/fashion-mnist is written as CIFAR-10 batches (tests/tools/fashion_to_cifar.py).
# Environment: TRAIN (training images, default 10000), TEST (default 2000), THREADS (threads per
#   framework, default: the CPUs this process may use), DLTRAIN (default build/dl-train).
# The table goes to stdout (record it in bench/RESULTS.md); progress to stderr.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

runs="${1:-3}"
data="${2:-}"
train="${TRAIN:-10000}"
test_images="${TEST:-2000}"
threads="${THREADS:-$(nproc)}"
dltrain="${DLTRAIN:-build/dl-train}"
python=/usr/bin/python3
time_bin=/usr/bin/time
fashion=/usr/share/datasets/fashion-mnist

die() {
  echo "compare_resnet20.sh: $*" >&2
  exit 1
}

for n in "$runs" "$train" "$test_images" "$threads"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "'$n' is not a positive integer (runs, TRAIN, TEST, THREADS)"
done
[[ -x "$dltrain" ]] || die "$dltrain: not built; run: meson setup build && ninja -C build"
[[ -x "$time_bin" ]] || die "$time_bin: not found; run: scripts/install_packages.sh"
"$python" -c 'import torch' 2>/dev/null ||
  die "$python cannot import torch; run: scripts/install_packages.sh --bench"

work="$(mktemp -d -t dl-train-resnet20.XXXXXX)"
trap 'rm -rf "$work"' EXIT

if [[ -z "$data" ]]; then
  [[ -d "$fashion" ]] || die "$fashion: missing (apt-get install dataset-fashion-mnist), or pass DATA_DIR"
  data="$work/cifar"
  "$python" tests/tools/fashion_to_cifar.py "$fashion" "$data" "$train" "$test_images" >&2
  source_text="Fashion-MNIST as CIFAR-10 batches (tests/tools/fashion_to_cifar.py): $train training, $test_images test images"
else
  source_text="$data (first $train training images)"
fi

# measure NAME COMMAND...: one run; peak RSS (KiB) to NAME.rss, output to NAME.log.
measure() {
  local name=$1
  shift
  "$time_bin" -f %M -o "$work/$name.rss" "$@" >"$work/$name.log" 2>&1 ||
    { tail -5 "$work/$name.log" >&2; die "$name failed: $*"; }
}

# One line per run in NAME.row: images/s, peak RSS in MiB, test accuracy.
dltrain_run() {
  local name=$1
  echo "==> $name" >&2
  OMP_NUM_THREADS="$threads" measure "$name" "$dltrain" --config configs/resnet20-cifar10.yaml \
    --set "data.directory=$data" --set "data.trainLimit=$train" --set epochs=1 \
    --set backend=cpu --set "output.directory=$work/$name" --overwrite
  "$python" - "$work/$name/summary.json" "$work/$name.rss" >"$work/$name.row" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(f"{s['train_images_per_second']:.1f} {int(open(sys.argv[2]).read()) / 1024:.0f} {s['test_accuracy']:.4f}")
PY
}

pytorch_run() {
  local name=$1
  shift
  echo "==> $name" >&2
  measure "$name" "$python" bench/pytorch_resnet.py --data-dir "$data" --epochs 1 \
    --threads "$threads" --train-limit "$train" "$@"
  "$python" - "$work/$name.log" "$work/$name.rss" >"$work/$name.row" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print(f"{rows[-1]['train_images_per_second']:.1f} {int(open(sys.argv[2]).read()) / 1024:.0f} {rows[0]['test_accuracy']:.4f}")
PY
}

for ((run = 1; run <= runs; run++)); do
  dltrain_run "dltrain-$run"
  pytorch_run "pytorch-$run"
  pytorch_run "pytorch_cl-$run" --channels-last
done

"$python" - "$work" "$runs" <<'PY' >"$work/table"
import statistics, sys
work, runs = sys.argv[1], int(sys.argv[2])
def rows(side):
    return [list(map(float, open(f"{work}/{side}-{r}.row").read().split())) for r in range(1, runs + 1)]
sides = {"dltrain": "dl-train", "pytorch": "PyTorch (NCHW)", "pytorch_cl": "PyTorch (channels-last)"}
med = {s: [statistics.median(col) for col in zip(*rows(s))] for s in sides}
best = max(("pytorch", "pytorch_cl"), key=lambda s: med[s][0])
print("| run | images/s (median) | all runs | peak RSS MiB | test accuracy | speed vs best PyTorch | memory vs best PyTorch |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for s, label in sides.items():
    all_runs = " ".join(f"{r[0]:.0f}" for r in rows(s))
    print(f"| {label} | {med[s][0]:.1f} | {all_runs} | {med[s][1]:.0f} | {med[s][2]:.4f} | "
          f"{med[s][0] / med[best][0]:.2f}x | {med[s][1] / med[best][1]:.2f}x |")
PY

echo "ResNet-20, batch 128, one epoch per run, $runs runs per side, interleaved; $threads threads per side."
echo "Data: $source_text."
echo "Processor: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs usable; torch $("$python" -c 'import torch; print(torch.__version__)'); dl-train $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
echo
cat "$work/table"
