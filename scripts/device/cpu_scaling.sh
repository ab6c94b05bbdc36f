#!/usr/bin/env bash
# One CPU worker's images/s from 1 thread to every core of the machine it runs on, dl-train and
# PyTorch interleaved at each thread count (LeNet, the Fashion-MNIST subset of the CPU kit, one
# epoch, batch 128). Made for the device machine's 16 cores; runs anywhere the kit and a python3
# with torch are. Run from the repository root:
#
#   scripts/device/cpu_scaling.sh [THREADS ...]     (default: 1 2 4 8 ... up to the cores)
#
# Environment: CPU_KIT (default device-cpu-kit), OUT (default runs/cpu-scaling), PYTHON.
set -uo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo_root" || exit 2
kit="${CPU_KIT:-device-cpu-kit}"
out="${OUT:-runs/cpu-scaling}"
python="${PYTHON:-python3}"
readonly kRunLimitSeconds=120
mkdir -p "$out"
[[ -x "$kit/bin/dl-train" ]] || { echo "cpu_scaling.sh: $kit/bin/dl-train missing; build it with scripts/device/build_cpu_kit.sh" >&2; exit 2; }
export LD_LIBRARY_PATH="$repo_root/$kit/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

cores="$(nproc)"
threads=("$@")
if ((${#threads[@]} == 0)); then
  for ((t = 1; t < cores; t *= 2)); do threads+=("$t"); done
  threads+=("$cores")
fi

data="$kit/data"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $cores cores; $(head -n 2 "$kit/MANIFEST.txt" | tail -n 1)"
"$kit/bin/dl-train" info 2>&1 | grep -E "cpu:|kernels|BLAS" | head -n 3
table="$out/cpu_scaling.md"
{
  echo "| threads | dl-train images/s | dl-train accuracy | PyTorch images/s | PyTorch accuracy | ratio |"
  echo "| ---: | ---: | ---: | ---: | ---: | ---: |"
} >"$table"
for t in "${threads[@]}"; do
  run_dir="$out/dl-train-t$t"
  timeout "$kRunLimitSeconds" "$kit/bin/dl-train" --config configs/fashion-mnist.yaml --set backend=cpu \
    --set epochs=1 --set parallel.workers=1 --set "parallel.blasThreads=$t" \
    --set "data.trainImages=$data/train-images-idx3-ubyte.gz" \
    --set "data.trainLabels=$data/train-labels-idx1-ubyte.gz" \
    --set "data.testImages=$data/t10k-images-idx3-ubyte.gz" \
    --set "data.testLabels=$data/t10k-labels-idx1-ubyte.gz" \
    --set "output.directory=$run_dir" --overwrite >"$out/dl-train-t$t.log" 2>&1
  ours=$("$python" -c 'import json,sys; s=json.load(open(sys.argv[1])); print(round(s["train_images_per_second"]), s["test_accuracy"])' "$run_dir/summary.json" 2>/dev/null || echo "failed -")
  peer_line=$(timeout "$kRunLimitSeconds" "$python" bench/gpu/pytorch_lenet_gpu.py --device cpu --threads "$t" \
    --precisions float32 --modes eager --data-dir "$data" 2>>"$out/pytorch-t$t.log" | grep '^{' | tail -n 1)
  peer=$("$python" -c 'import json,sys; r=json.loads(sys.argv[1]); print(round(r["train_images_per_second"]), r["test_accuracy"])' "$peer_line" 2>/dev/null || echo "failed -")
  read -r ours_ips ours_acc <<<"$ours"
  read -r peer_ips peer_acc <<<"$peer"
  ratio=$("$python" -c 'import sys; print(f"{float(sys.argv[1])/float(sys.argv[2]):.2f}x")' "$ours_ips" "$peer_ips" 2>/dev/null || echo "-")
  echo "| $t | $ours_ips | $ours_acc | $peer_ips | $peer_acc | $ratio |" | tee -a "$table"
done
echo
grep -h -m1 "CPU kernels" "$out"/dl-train-t*.log | head -n 1
"$python" -c 'import torch; print("PyTorch", torch.__version__, "ATen CPU capability:", torch.backends.cpu.get_cpu_capability())' 2>/dev/null
cat "$table"
