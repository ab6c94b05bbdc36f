#!/usr/bin/env bash
# Installs the Debian packages dl-train needs to build, test and benchmark.
# Only packages that are missing are installed, so a re-run is fast and works offline.
#
# Usage: scripts/install_packages.sh [--bench] [--mpi]
#   --bench  also the PyTorch peers for bench/ (python3-torch, python3-numpy, and python3-torchvision
#            for bench/compare_decode.sh's ImageFolder + DataLoader)
#   --mpi    also OpenMPI for the MPI collective and its tests
set -euo pipefail

# nlohmann-json3-dev: the one JSON writer (src/io/json_writer.hpp). libdnnl-dev: oneDNN's JIT
# sgemm for the CPU backend (cpu.kernels; without it the build uses BLAS). help2man: the man page.
# chromium: the report's test in a real browser (tests/cli/report_browser.sh).
# python3-yaml, python3-jsonschema and shellcheck: the checks of the cluster recipes
# (tests/cluster: the MPIJob schema, the Dockerfile's RUN steps). libprotobuf-dev,
# protobuf-compiler: `export --format onnx`; python3-onnx: its test (the ONNX checker and the
# NumPy reference run of an exported model). qemu-user: the CPU kernels' run-time choice on
# emulated processors without AVX-512 and without AVX2 (tests/backend/cpu_isa_qemu.sh).
# python3-pil: the image-folder test writes its PNG and JPEG files with it (tests/cli/image_folder.sh).
packages=(build-essential meson ninja-build pkg-config libyaml-cpp-dev libcli11-dev
  libfmt-dev nlohmann-json3-dev catch2 libopenblas-dev zlib1g-dev libspng-dev libturbojpeg0-dev dataset-fashion-mnist python3 time
  python3-yaml python3-jsonschema shellcheck libprotobuf-dev protobuf-compiler python3-onnx
  libdnnl-dev help2man chromium qemu-user python3-pil)
bench_packages=(python3-torch python3-numpy python3-torchvision)
mpi_packages=(libopenmpi-dev openmpi-bin)

usage() {
  echo "usage: $0 [--bench] [--mpi]"
}

for arg in "$@"; do
  case "$arg" in
    --bench) packages+=("${bench_packages[@]}") ;;
    --mpi) packages+=("${mpi_packages[@]}") ;;
    -h | --help)
      usage
      exit 0
      ;;
    *)
      echo "install_packages.sh: unknown option '$arg'; use --bench and/or --mpi" >&2
      usage >&2
      exit 2
      ;;
  esac
done

is_installed() {
  local status
  status=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || return 1
  [[ "$status" == "install ok installed" ]]
}

missing=()
for package in "${packages[@]}"; do
  if ! is_installed "$package"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "==> packages: all ${#packages[@]} already installed"
  exit 0
fi

# Root needs no prefix; otherwise sudo, when there is one.
as_root=()
if ((EUID != 0)); then
  if command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
  else
    echo "install_packages.sh: missing packages (${missing[*]}) and not root, no sudo;" \
      "install them as root: apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi

echo "==> packages: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y --no-install-recommends "${missing[@]}"
