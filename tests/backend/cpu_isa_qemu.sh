#!/usr/bin/env bash
# The CPU backend's variant choice on processors this machine is not (backend/cpu/isa.hpp): the
# probe (cpu_isa_probe.cpp) runs under qemu-user on a CPU model without AVX2 (Nehalem: the plain
# x86-64 kernels) and on one with AVX2 but no AVX-512 (Haswell: the x86-64-v3 kernels; qemu does
# not emulate AVX-512). Skips itself (exit 77) where qemu-x86_64 is not installed (Debian:
# qemu-user).
# Usage: cpu_isa_qemu.sh PROBE
set -euo pipefail

probe="$1"
if ! command -v qemu-x86_64 >/dev/null; then
  echo "skipped: qemu-x86_64 not installed (apt-get install qemu-user)"
  exit 77
fi

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

check() {
  local model="$1" expected="$2" found
  found="$(qemu-x86_64 -cpu "$model" "$probe")" || fail "the probe did not run on -cpu $model"
  [[ "$found" == "$expected" ]] || fail "-cpu $model: detected $found, expected $expected"
  echo "ok: -cpu $model: $found"
}

check Nehalem SSE2
check Haswell-v4 AVX2
echo "ok: this machine: $("$probe")"
