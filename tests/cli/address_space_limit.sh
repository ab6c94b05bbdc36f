#!/usr/bin/env bash
# Under an address-space limit (ulimit -v, which some clusters' batch systems set), a run that
# runs out of memory ends with exit 7 and one line saying what, never a crash. Two crashes were
# met just below the limit a run needs: oneDNN generating its kernels' code on the first product
# segfaulted where that code found no room, and glibc aborted an out-of-memory exception thrown
# through std::call_once when it could not load libgcc_s to unwind it (exit 134, or exit 1 with
# "error: std::bad_alloc"), and an exception a compute thread's task threw ended the process
# (std::terminate). Where a run fails depends on the machine's thread count, so the test finds the
# smallest limit this machine trains under, then runs every limit up to 48 MiB below it (down to
# what the program needs to start at all).
source "$(dirname "$0")/lib.sh"
readonly STEP_KIB=1024 SCAN_STEPS=48 RUN_SECONDS=120
make_data "$WORK/data" 2000 500
run_under() {  # run_under KIB: exit status of a LeNet run under ulimit -v KIB; stderr in err.txt
  local rc=0
  mapfile -t args < <(small_args "$WORK/data" "$WORK/run" output.console=quiet)
  (ulimit -v "$1" && exec timeout "$RUN_SECONDS" "$DL_TRAIN" "${args[@]}" --overwrite) \
    >"$WORK/out.txt" 2>"$WORK/err.txt" || rc=$?
  echo "$rc"
}

# The limit is met in the products (cpu.kernels); OpenBLAS, the other library, retries a failed
# allocation without end, so the scan needs oneDNN's.
mapfile -t args < <(small_args "$WORK/data" "$WORK/run" output.console=lines)
"$DL_TRAIN" "${args[@]}" >"$WORK/unlimited.txt" 2>&1 || fail "unlimited run: $(tail -3 "$WORK/unlimited.txt")"
grep -q "CPU kernels: oneDNN" "$WORK/unlimited.txt" ||
  { echo "SKIP: this build has no oneDNN ($(grep -m1 'CPU kernels' "$WORK/unlimited.txt"))"; exit 77; }

# smallest_passing COMMAND...: the smallest limit (to STEP_KIB) under which COMMAND LIMIT exits 0.
smallest_passing() {
  local low=$((64 * 1024)) high=$((8 * 1024 * 1024)) middle
  [ "$("$@" $high)" = 0 ] || fail "$* fails under ulimit -v $high: $(cat "$WORK/err.txt")"
  while ((high - low > STEP_KIB)); do
    middle=$(((low + high) / 2))
    if [ "$("$@" $middle)" = 0 ]; then high=$middle; else low=$middle; fi
  done
  echo $high
}
version_under() {  # version_under KIB: exit status of dl-train --version under ulimit -v KIB
  local rc=0
  (ulimit -v "$1" && exec "$DL_TRAIN" --version) >/dev/null 2>"$WORK/err.txt" || rc=$?
  echo "$rc"
}
trains=$(smallest_passing run_under)
# Below what the program needs to start at all, its shared libraries fail to load or to set
# themselves up (the loader's exit 127, a library's own initializer): not dl-train's to report.
starts=$(smallest_passing version_under)
echo "ok: the smallest limit that trains is about $((trains / 1024)) MiB, that starts $((starts / 1024)) MiB"

counts=()
for ((step = 1; step <= SCAN_STEPS; ++step)); do
  limit=$((trains - step * STEP_KIB))
  ((limit >= starts)) || break
  rc=$(run_under $limit)
  case $rc in
    0) ;;
    7)
      [ "$(wc -l <"$WORK/err.txt")" -eq 1 ] && grep -qE "^dl-train: error: (out of memory|could not start)" "$WORK/err.txt" ||
        fail "ulimit -v $limit: exit 7 with: $(cat "$WORK/err.txt")" ;;
    *) fail "ulimit -v $limit: exit $rc (expected 0, or 7 for out of memory): $(tail -3 "$WORK/err.txt")" ;;
  esac
  counts+=("$rc")
done
echo "ok: ${#counts[@]} limits below it: exits $(printf '%s\n' "${counts[@]}" | sort | uniq -c | tr -s ' \n' ' ')"
