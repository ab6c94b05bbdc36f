#!/usr/bin/env bash
# Downloads the official binary CIFAR-10 (or CIFAR-100) archive from the authors' page, verifies
# it (size, SHA-256 and the page's MD5) before unpacking, and unpacks only the expected batch
# files into DIR (default: data/), giving data/cifar-10-batches-bin/ (or data/cifar-100-binary/),
# the folder configs/cifar10.yaml names in data.directory. Files already present are kept. Exits
# non-zero with an explanation when the archive cannot be fetched (offline machines: there is no
# Debian package of CIFAR; see data/README.md).
#
# Usage: scripts/fetch_cifar10.sh [cifar10|cifar100] [DIR]
# DL_CIFAR_MIRRORS (space-separated base URLs) replaces the authors' page, e.g. for a mirror
# inside a cluster; the checksums are checked all the same.
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
variant="${1:-cifar10}"
dir="${2:-${script_dir}/../data}"

mirrors=("https://www.cs.toronto.edu/~kriz")
if [[ -n "${DL_CIFAR_MIRRORS:-}" ]]; then
  read -r -a mirrors <<<"${DL_CIFAR_MIRRORS}"
fi

# The archive, its size in bytes, its SHA-256 and MD5, the folder it unpacks to, and the files
# taken from it. The MD5 is the one the authors publish on https://www.cs.toronto.edu/~kriz/cifar.html;
# the authors publish no SHA-256: the value here is the one several independent projects pin for
# the same archive (tensorflow-datasets' checksum list among them), not confirmed against the
# original from this machine (no network). Both must match.
case "${variant}" in
  cifar10)
    archive="cifar-10-binary.tar.gz"
    size=170052171
    sha256="c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd"
    md5="c32a1d4ab5d03f1284b67883e8d87530"
    folder="cifar-10-batches-bin"
    members=(data_batch_1.bin data_batch_2.bin data_batch_3.bin data_batch_4.bin
      data_batch_5.bin test_batch.bin batches.meta.txt)
    ;;
  cifar100)
    archive="cifar-100-binary.tar.gz"
    size=168513733
    sha256="58a81ae192c23a4be8b1804d68e518ed807d710a4eb253b1f2a199162a40d8ec"
    md5="03b5dce01913d631647c71ecec9e9cb8"
    folder="cifar-100-binary"
    members=(train.bin test.bin coarse_label_names.txt fine_label_names.txt)
    ;;
  *)
    echo "fetch_cifar10.sh: unknown data set '${variant}'; use cifar10 or cifar100" >&2
    exit 2
    ;;
esac
connect_timeout_s=15
max_time_s=1800
retries=2

die() {
  echo "fetch_cifar10.sh: $*" >&2
  exit 1
}

for tool in sha256sum md5sum tar; do
  command -v "${tool}" >/dev/null 2>&1 || die "${tool} is not installed; install coreutils and tar"
done

# shellcheck source=download_common.sh
source "${script_dir}/download_common.sh"

have_all_members() {
  local m
  for m in "${members[@]}"; do
    [[ -f "${dir}/${folder}/${m}" ]] || return 1
  done
}

mkdir -p "${dir}" || die "${dir}: cannot create the directory; check the path and permissions"
if have_all_members; then
  echo "fetch_cifar10.sh: ${dir}/${folder} is complete"
  exit 0
fi

# check FILE: empty output when FILE is the archive; otherwise what differs.
check() {
  local actual_size got_sha got_md5
  actual_size="$(wc -c <"$1" | tr -d ' ')"
  got_sha="$(sha256sum "$1" | cut -d' ' -f1)"
  got_md5="$(md5sum "$1" | cut -d' ' -f1)"
  if [[ "${actual_size}" != "${size}" || "${got_sha}" != "${sha256}" || "${got_md5}" != "${md5}" ]]; then
    echo "${actual_size} bytes, SHA-256 ${got_sha}, MD5 ${got_md5}; expected ${size} bytes, SHA-256 ${sha256}, MD5 ${md5}"
  fi
}

part="${dir}/.${archive}.part.$$"
staging="${dir}/.${folder}.staging.$$"
trap 'rm -rf "${part}" "${staging}"' EXIT
failures=()
source_archive=""
# An archive copied here by hand (an offline machine) is used as it is, once it checks.
if [[ -f "${dir}/${archive}" ]]; then
  mismatch="$(check "${dir}/${archive}")"
  if [[ -z "${mismatch}" ]]; then
    source_archive="${dir}/${archive}"
  else
    failures+=("${dir}/${archive}: ${mismatch}")
  fi
fi
for mirror in "${mirrors[@]}"; do
  [[ -z "${source_archive}" ]] || break
  url="${mirror}/${archive}"
  if ! err="$(fetch_to "${url}" "${part}")"; then
    failures+=("${err}")
    continue
  fi
  mismatch="$(check "${part}")"
  if [[ -n "${mismatch}" ]]; then
    failures+=("${url}: ${mismatch}")
    continue
  fi
  source_archive="${part}"
done
if [[ -z "${source_archive}" ]]; then
  {
    echo "fetch_cifar10.sh: could not fetch ${archive}:"
    for f in "${failures[@]}"; do echo "  ${f}"; done
    echo "Is this machine offline? Copy ${archive} from a machine with internet into ${dir}/"
    echo "and run this again (it is checked the same way), or set DL_CIFAR_MIRRORS."
  } >&2
  exit 1
fi

# Only the expected members, by name (never whatever paths the archive holds), into a staging
# folder; each missing file is then renamed into place. Files already there are left alone.
mkdir -p "${staging}" "${dir}/${folder}"
tar -xzf "${source_archive}" -C "${staging}" "${members[@]/#/${folder}/}" ||
  die "${archive}: verified, but tar could not unpack ${folder}/ from it"
for m in "${members[@]}"; do
  [[ -e "${dir}/${folder}/${m}" ]] || mv "${staging}/${folder}/${m}" "${dir}/${folder}/${m}"
done
echo "fetch_cifar10.sh: ${dir}/${folder} (archive verified: ${size} bytes, SHA-256, MD5)"
