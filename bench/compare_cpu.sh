#!/usr/bin/env bash
# Compares dl-train with PyTorch on the CPU: LeNet on Fashion-MNIST, one epoch, the same
# recipe (configs/fashion-mnist.yaml; bench/pytorch_lenet.py). Runs alternate (dl-train,
# PyTorch, dl-train, ...) so a change in the machine's load hits both alike. Builds nothing.
# The header names the processor, the environment that steers the libraries, and the kernels
# each side ran: dl-train's start-up lines (cpu.kernels, BLAS) and PyTorch's oneDNN ISA and
# convolution implementations (bench/pytorch_kernels.py under DNNL_VERBOSE=1).
#
# Usage: bench/compare_cpu.sh [runs=3]
# Environment:
#   DLTRAIN_SET      extra dl-train overrides, space-separated k=v (each becomes --set k=v)
#   DLTRAIN          the binary (default build/dl-train)
#   PYTORCH_THREADS  torch threads for the peer (default 2)
#   PYTORCH_ENV      as-is: PyTorch in this environment; clean: PyTorch with every OPENBLAS_*
#                    variable unset (for it alone: the machine's OPENBLAS_CORETYPE is there for
#                    dl-train's OpenBLAS, and PyTorch's fairest setup does without it); both
#                    (default): one run of each per round, and the ratios against either
# The table goes to stdout (record it by hand in bench/RESULTS.md); progress to stderr.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

runs="${1:-3}"
dltrain="${DLTRAIN:-build/dl-train}"
pytorch_threads="${PYTORCH_THREADS:-2}"
pytorch_env="${PYTORCH_ENV:-both}"
config=configs/fashion-mnist.yaml
python=/usr/bin/python3
time_bin=/usr/bin/time

die() {
  echo "compare_cpu.sh: $*" >&2
  exit 1
}

[[ "$runs" =~ ^[1-9][0-9]*$ ]] || die "runs '$runs' is not a positive integer; e.g. 3"
case "$pytorch_env" in
  as-is) peers=(pytorch) ;;
  clean) peers=(pytorch-clean) ;;
  both) peers=(pytorch pytorch-clean) ;;
  *) die "PYTORCH_ENV '$pytorch_env' is not as-is, clean or both" ;;
esac
[[ -x "$dltrain" ]] || die "$dltrain: not built; run: meson setup build && ninja -C build"
[[ -f "$config" ]] || die "$config: not found; run from a complete checkout"
[[ -x "$time_bin" ]] || die "$time_bin: not found; run: scripts/install_packages.sh"
torch_version="$("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null)" ||
  die "$python cannot import torch; run: scripts/install_packages.sh --bench"

extra_set=()
read -r -a overrides <<<"${DLTRAIN_SET:-}"
for override in "${overrides[@]}"; do
  extra_set+=(--set "$override")
done

work="$(mktemp -d -t dl-train-bench.XXXXXX)"
trap 'rm -rf "$work"' EXIT

# Runs one measured command; its peak RSS (KiB) goes to $1.rss, its output to $1.log.
measure() {
  local name="$1"
  shift
  if ! "$time_bin" -f %M -o "$work/$name.rss" "$@" >"$work/$name.log" 2>&1; then
    tail -n 20 "$work/$name.log" >&2
    die "$name failed: $*"
  fi
}

# The OPENBLAS_* variable names set here, for `env -u` in the clean PyTorch runs.
openblas_unset=()
while IFS='=' read -r name _; do
  [[ "$name" == OPENBLAS_* ]] && openblas_unset+=(-u "$name")
done < <(env)

# The command prefix that runs peer $1 (pytorch or pytorch-clean), into peer_prefix.
set_peer_prefix() {
  peer_prefix=(env)
  [[ "$1" != pytorch-clean ]] || peer_prefix+=("${openblas_unset[@]}")
}

# What each side runs on, for the header: written to $work/header before the timed runs.
{
  echo "env:     $(env | grep -E '^(OPENBLAS|OMP|GOMP|KMP|MKL|DNNL|ONEDNN)_' | sort | tr '\n' ' ')"
  flags="$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|fma|avx512f|avx512bw|avx512_bf16|amx_tile)$' | tr '\n' ' ')"
  family="$(grep -m1 '^cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')"
  model="$(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')"
  echo "cpuid:   family $family model $model; ${flags:-no AVX2}"
  for peer in "${peers[@]}"; do
    set_peer_prefix "$peer"
    probe="$("${peer_prefix[@]}" DNNL_VERBOSE=1 "$python" bench/pytorch_kernels.py \
      --threads "$pytorch_threads" 2>&1)" || die "bench/pytorch_kernels.py failed: $probe"
    isa="$(grep -m1 'info,cpu,isa:' <<<"$probe" | sed 's/.*isa://')"
    convs="$(grep 'exec,cpu,convolution,' <<<"$probe" | cut -d, -f5 | sort -u | tr '\n' ' ')"
    echo "$peer: oneDNN ISA ${isa:-none}; convolutions ${convs:-not on oneDNN}; $(grep '^torch-config:' <<<"$probe" | sed 's/^torch-config: //')"
  done
} >"$work/header"

for ((run = 1; run <= runs; run++)); do
  echo "==> run $run/$runs: dl-train" >&2
  out="$work/dltrain-$run-output"
  measure "dltrain-$run" "$dltrain" --config "$config" --set epochs=1 \
    --set "output.directory=$out" --overwrite "${extra_set[@]}"
  [[ -f "$out/summary.json" ]] || die "$dltrain wrote no $out/summary.json"
  cp "$out/summary.json" "$work/dltrain-$run.json"

  [[ $run -gt 1 ]] || grep -E '^(CPU kernels|BLAS):' "$work/dltrain-$run.log" | sed 's/; BLAS/\nBLAS/' |
    sed 's/^/dl-train: /' >>"$work/header"

  for peer in "${peers[@]}"; do
    echo "==> run $run/$runs: $peer ($pytorch_threads threads)" >&2
    set_peer_prefix "$peer"
    measure "$peer-$run" "${peer_prefix[@]}" "$python" bench/pytorch_lenet.py \
      --threads "$pytorch_threads"
    cp "$work/$peer-$run.log" "$work/$peer-$run.json"
  done
done

command_line="bench/compare_cpu.sh $runs"
if [[ -n "${DLTRAIN_SET:-}" ]]; then
  command_line="DLTRAIN_SET='$DLTRAIN_SET' $command_line"
fi
command_line="PYTORCH_ENV=$pytorch_env $command_line"
python3 bench/summarize.py "$work" "$runs" --torch-version "$torch_version" \
  --pytorch-threads "$pytorch_threads" --command "$command_line" --peers "${peers[@]}" \
  --header "$work/header"
