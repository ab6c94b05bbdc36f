#!/usr/bin/env bash
# Builds the CPU scaling kit: dl-train without CUDA, built here for the device machine's many
# cores (its processor is not this one: plain x86-64, with the CPU backend's own kernels compiled
# for each x86-64 level and the widest it runs taken at start-up, oneDNN's JIT likewise), with
# the shared libraries it needs that the device image lacks, and a Fashion-MNIST subset small
# enough to travel beside the GPU kit. scripts/device/cpu_scaling.sh runs it there, and
# bin/cpu_step_profile (bench/cpu_step_profile.cpp) times each op of the step on many threads.
#
# Usage: scripts/device/build_cpu_kit.sh [--source DIR] [--kit DIR] [--jobs N] [--train-images N]
#   --source DIR  the source tree to build (default: this checkout)
#   --kit DIR     the kit folder, replaced (default: device-cpu-kit in this checkout, git-ignored)
#   --jobs N      ninja jobs (default 2)
#   --train-images N  training images of the subset (default 15000; 60000 is the whole set, as
#                 bench/compare_cpu.sh trains on, for a kit that travels alone)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
readonly kDataSource=/usr/share/datasets/fashion-mnist
train_images=15000  # enough for a steady images/s at 16 threads, small enough to carry
readonly kTestImages=2000
# What the device machine provides itself: glibc and GCC's C++ runtime.
readonly kSystemLibraries='^(libc|libm|libdl|libpthread|librt|ld-linux-x86-64|libstdc\+\+|libgcc_s)\.so'

die() {
  echo "build_cpu_kit.sh: $*" >&2
  exit 1
}

source_dir="$repo_root"
kit_dir="$repo_root/device-cpu-kit"
jobs=2
while (($# > 0)); do
  case "$1" in
    --source) source_dir="$(cd "${2:?--source needs a folder}" && pwd)"; shift 2 ;;
    --kit) kit_dir="${2:?--kit needs a folder}"; shift 2 ;;
    --jobs) jobs="${2:?--jobs needs a number}"; shift 2 ;;
    --train-images) train_images="${2:?--train-images needs a number}"; shift 2 ;;
    *) die "unknown option '$1'; see the header of $0" ;;
  esac
done
build_dir="$source_dir/build-device-cpu"
[[ -f "$kDataSource/train-images-idx3-ubyte.gz" ]] || die "$kDataSource: missing; install dataset-fashion-mnist"

[[ "$train_images" =~ ^[1-9][0-9]*$ ]] && ((train_images <= 60000)) ||
  die "--train-images '$train_images' is not a count from 1 to 60000"
# Tests on for cpu_step_profile only (tests/tools); ninja builds just the two programs.
options=(-Dbuildtype=release -Dnative_cpu=false -Dblas=reference -Dcuda=disabled -Dmpi=disabled
  -Dtests=true -Dprefer_static=true)
if [[ -f "$build_dir/meson-private/coredata.dat" ]]; then
  meson setup --reconfigure "$build_dir" "$source_dir" "${options[@]}" >/dev/null
else
  meson setup "$build_dir" "$source_dir" "${options[@]}" >/dev/null
fi
ninja -C "$build_dir" -j "$jobs" dl-train tests/tools/cpu_step_profile

rm -rf "$kit_dir"
mkdir -p "$kit_dir/bin" "$kit_dir/lib" "$kit_dir/data"
strip --strip-unneeded -o "$kit_dir/bin/dl-train" "$build_dir/dl-train"
strip --strip-unneeded -o "$kit_dir/bin/cpu_step_profile" "$build_dir/tests/tools/cpu_step_profile"
# Every shared library dl-train loads beyond glibc and the GCC runtime travels in lib/, and so
# do the ones those load (oneDNN brings OpenMP's runtime and the OpenCL loader).
ldd "$kit_dir/bin/dl-train" | awk '/=> \//{print $1, $3}' | while read -r name path; do
  [[ "$name" =~ $kSystemLibraries ]] && continue
  cp -L "$path" "$kit_dir/lib/"
  ldd "$path" | awk '/=> \//{print $1, $3}' | while read -r inner inner_path; do
    [[ "$inner" =~ $kSystemLibraries ]] || cp -L "$inner_path" "$kit_dir/lib/"
  done
done

python3 - "$kDataSource" "$kit_dir/data" "$train_images" "$kTestImages" <<'PY'
import gzip, struct, sys
source, target, train, test = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def subset(name, count):
    with gzip.open(f"{source}/{name}") as f:
        magic, n = struct.unpack(">II", f.read(8))
        dims = struct.unpack(">" + "I" * ((magic & 0xFF) - 1), f.read(4 * ((magic & 0xFF) - 1)))
        size = 1
        for d in dims: size *= d
        body = f.read(count * size)
    with gzip.open(f"{target}/{name}", "wb", compresslevel=6) as out:
        out.write(struct.pack(">II", magic, count) + struct.pack(">" + "I" * len(dims), *dims) + body)
for prefix, count in (("train", train), ("t10k", test)):
    subset(f"{prefix}-images-idx3-ubyte.gz", count)
    subset(f"{prefix}-labels-idx1-ubyte.gz", count)
PY

{
  echo "dl-train CPU scaling kit, built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
  echo "source: $source_dir at $(git -C "$source_dir" describe --always --dirty 2>/dev/null || echo unknown)"
  echo "meson options: ${options[*]}"
  echo "data: Fashion-MNIST, first $train_images training and $kTestImages test images"
  echo "lib/: $(ls "$kit_dir/lib" | tr '\n' ' ')"
} >"$kit_dir/MANIFEST.txt"
cat "$kit_dir/MANIFEST.txt"
du -sh "$kit_dir"
