#!/usr/bin/env bash
# Packs kit folders into one xz-compressed tarball, device-pack/kits.tar.xz (git-ignored), so
# that the GPU kit, the MPI kit and the CPU scaling kit travel in one `run` call (64 MiB per call:
# unpacked they are about 100 MiB, packed about 55, most of it the gzip-compressed data). On the
# device the command starts with
#   tar -xJf device-pack/kits.tar.xz
# (python3 -c "import tarfile; tarfile.open('device-pack/kits.tar.xz').extractall()" where tar
# has no xz).
#
# Usage: scripts/device/pack_kits.sh KIT_FOLDER...   (e.g. device-kit device-kit-mpi device-cpu-kit)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo_root"
readonly kLimitMiB=58  # leaves room for the working tree in the call's 64 MiB
(($# > 0)) || { echo "usage: $0 KIT_FOLDER..." >&2; exit 2; }
for kit in "$@"; do
  [[ -d "$kit" ]] || { echo "pack_kits.sh: $kit: no such folder; build it first (scripts/device/build_*kit.sh)" >&2; exit 2; }
done
mkdir -p device-pack
tar -cf - "$@" | xz -T0 -6 >device-pack/kits.tar.xz
size=$(stat -c %s device-pack/kits.tar.xz)
echo "device-pack/kits.tar.xz: $((size / 1024 / 1024)) MiB ($*)"
((size <= kLimitMiB * 1024 * 1024)) || { echo "pack_kits.sh: over ${kLimitMiB} MiB; pack fewer kits" >&2; exit 1; }
