#!/usr/bin/env bash
# A CPU run of a binary built with the CUDA backend loads no cuBLAS: the backend loads it when it
# first needs it (cuda/cublas_library.hpp), which keeps about 150 MB of libcublasLt's data out of
# every CPU process. `info` still loads it and names its version. The dynamic loader's own log
# (LD_DEBUG=files) lists every library a process opens, linked or loaded later.
source "$(dirname "$0")/lib.sh"
"$DL_TRAIN" info >"$WORK/info.log" 2>&1 || fail "info failed: $(head "$WORK/info.log")"
grep -q "^  cuda: built" "$WORK/info.log" || { echo "SKIP: this binary has no CUDA backend"; exit 77; }

make_data "$WORK/data" 200 50
mapfile -t args < <(small_args "$WORK/data" "$WORK/run" backend=cpu)
LD_DEBUG=files "$DL_TRAIN" "${args[@]}" >"$WORK/train.log" 2>"$WORK/train.loader" ||
  fail "CPU training failed: $(tail -3 "$WORK/train.log")"
grep -q "^done: " "$WORK/train.log" || fail "no done line: $(tail -3 "$WORK/train.log")"
grep -q "file=libcudart" "$WORK/train.loader" ||
  fail "the loader's log names no library this binary links (libcudart): is LD_DEBUG honoured?"
if grep -q "file=libcublas" "$WORK/train.loader"; then
  fail "a CPU run loaded cuBLAS: $(grep -m2 'file=libcublas' "$WORK/train.loader")"
fi

LD_DEBUG=files "$DL_TRAIN" info >"$WORK/info2.log" 2>"$WORK/info.loader"
grep -q "file=libcublas.so" "$WORK/info.loader" || fail "info did not load cuBLAS"
grep -Eq "^    cuBLAS [0-9]+\.[0-9]+\.[0-9]+" "$WORK/info2.log" ||
  fail "info names no cuBLAS version: $(grep -i cublas "$WORK/info2.log")"
grep -Eq "^    cuBLASLt [0-9]+\.[0-9]+\.[0-9]+" "$WORK/info2.log" ||
  fail "info names no cuBLASLt version: $(grep -i cublas "$WORK/info2.log")"
echo "ok: a CPU run opened no libcublas; info loaded it: $(grep -E '^    cuBLAS ' "$WORK/info2.log" | sed 's/^ *//')"
